"""The :class:`Memory` handle: signed, lineage-labelled agent memory with the shape of mem0
(``add`` / ``search`` / ``get`` / ``history`` / ``delete``) over the real signed store."""

from __future__ import annotations

import decimal
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from . import _native
from ._checked import checked
from ._types import (
    AuditReport,
    Checkpoint,
    Entry,
    Lineage,
    Principal,
    PrincipalChange,
    Recall,
    audit_from_native,
    checkpoint_from_note,
    entry_from_native,
    lineage_from_native,
    principal_from_native,
    recall_from_native,
)
from .errors import InputError, IntegrityError
from .gate import Decision, Policy, call_json, decision_from_native
from .labels import TrustClass
from .search import (
    EmbedderSpec,
    SearchModeLike,
    VectorIndexStatus,
    embedder_args,
    mode_name,
    status_from_native,
)

#: An entry, given by id or as an object that has one (an :class:`Entry`, a ``Recalled``).
EntryRef = str | Entry
#: A weight: a number in [0, 1] with at most four decimals (``0.9``, ``"0.9"``,
#: ``Decimal("0.9")``); never rounded, a fifth decimal is an :class:`~memlineage.InputError`.
Weight = float | int | str | decimal.Decimal
#: A parent: an entry (weight 1), or ``(entry, weight)``.
ParentSpec = EntryRef | tuple[EntryRef, Weight]

DEFAULT_SCOPE = "default"
_ADD_KEYS = frozenset(
    ("content", "principal", "kind", "parents", "scope", "source", "metadata", "context_hash")
)


def entry_id(ref: EntryRef) -> str:
    """The id of ``ref`` (an id string, or anything with an ``id``)."""
    if isinstance(ref, str):
        return ref
    rid = getattr(ref, "id", None)
    if isinstance(rid, str):
        return rid
    raise InputError(f"expected an entry id or an entry, found {type(ref).__name__}")


def weight_text(w: Weight) -> str:
    """A weight as the exact decimal text the store parses (a float by its shortest repr)."""
    if isinstance(w, bool):
        raise InputError(f"a weight is a number in [0, 1], not {w!r}")
    if isinstance(w, float):
        return repr(w)
    if isinstance(w, (int, str, decimal.Decimal)):
        return str(w)
    raise InputError(f"a weight is a number in [0, 1], not {type(w).__name__}")


def _parents(parents: Iterable[ParentSpec] | None) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for p in parents or ():
        if isinstance(p, tuple):
            if len(p) != 2:
                raise InputError(f"a parent is an entry or (entry, weight), not {p!r}")
            out.append((entry_id(p[0]), weight_text(p[1])))
        else:
            out.append((entry_id(p), None))
    return out


class Principals:
    """The principals of a store (``m.principals``): who may sign, with which key, at which
    trust class. Changes are signed registry records by the operator; new keys are saved in the
    store's ``keys/`` directory before they are registered."""

    __slots__ = ("_h",)

    def __init__(self, handle: _native.Handle) -> None:
        self._h = handle

    def list(self) -> list[Principal]:
        """Every principal, as replayed from the log."""
        return [principal_from_native(t) for t in self._h.principals()]

    def get(self, name: str) -> Principal | None:
        """The principal ``name``, or ``None``."""
        return next((p for p in self.list() if p.name == name), None)

    def __getitem__(self, name: str) -> Principal:
        p = self.get(name)
        if p is None:
            raise KeyError(name)
        return p

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[Principal]:
        return iter(self.list())

    @checked
    def add(self, name: str, trust: TrustClass | str) -> PrincipalChange:
        """Registers ``name`` (1 to 64 characters of ``a-z 0-9 . _ -``, never reused) as
        ``trusted`` or ``external``, with a fresh key."""
        cls = trust.value if isinstance(trust, TrustClass) else str(trust)
        key_id, key_file, record, index = self._h.add_principal(name, cls)
        return PrincipalChange(name, record, index, key_id, key_file)

    @checked
    def rotate(self, name: str) -> PrincipalChange:
        """Gives ``name`` a new key; entries signed with the old key after this are refused."""
        key_id, key_file, record, index = self._h.rotate_principal(name)
        return PrincipalChange(name, record, index, key_id, key_file)

    @checked
    def revoke(self, name: str, reason: str) -> PrincipalChange:
        """Revokes ``name``: every entry it signs from now on is refused. Entries written
        before stay valid; :meth:`Memory.distrust` with ``principal=`` taints them too."""
        record, index = self._h.revoke_principal(name, reason)
        return PrincipalChange(name, record, index)


class Memory:
    """Signed, lineage-labelled agent memory (one store; see :meth:`open`).

    Every entry is signed by its principal, appended to an RFC 6962 Merkle log, and labelled
    from its parents' labels; retrieval verifies entries before they reach a prompt; the gate
    refuses tool calls whose parameters descend from untrusted lineage.

    One ``Memory`` may be shared by many threads: every call runs with the GIL released
    (signing, verification, search, the gate) and the store orders the writes. Use it as a
    context manager, or call :meth:`close`. For asyncio, :class:`~memlineage.AsyncMemory`.
    """

    __slots__ = ("_h", "principals")

    def __init__(self, handle: _native.Handle) -> None:
        self._h = handle
        #: The store's principals: ``add``, ``rotate``, ``revoke``, ``list``.
        self.principals = Principals(handle)

    @classmethod
    @checked
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        tau: Weight | None = None,
        fallback: str | None = None,
        create: bool = True,
        lexical_index: bool = False,
        embedder: EmbedderSpec | None = None,
    ) -> Memory:
        """Opens the store at ``path`` — or, like the CLI, at ``$MEMLINEAGE_STORE``, else
        ``./.memlineage/store.db``; a directory means ``store.db`` in it, ``"memory:"`` a store
        in RAM. Secret keys are loaded from ``keys/`` beside the store.

        When there is no store there and ``create`` is true, one is created as ``memlineage
        init`` creates it: an operator, the trusted writer ``agent`` and the external ``web``,
        with τ = ``tau`` (default 0.5) and the ``fallback`` (default ``strict``). On an existing
        store, ``tau`` and ``fallback`` make this handle's writes stricter than the store's rule
        (a laxer rule is a :class:`~memlineage.RefusedError`).

        With ``lexical_index``, the handle keeps its own lexical index: the first
        :meth:`search` reads the store once, every later one catches up with what was appended
        and ranks with a bounded top-k whose cost does not grow with the store (for a handle
        that lives long, as an agent's does; ``docs/retrieval.md``).

        With ``embedder``, the embedding model (all-MiniLM-L6-v2) is attached and
        :meth:`search` can rank by meaning (``mode="semantic"`` or ``"hybrid"``):
        ``"default"`` is the model ``scripts/fetch-embedding-model.sh`` installs (or
        ``$MEMLINEAGE_EMBEDDING_MODEL``), any other string or path the model's directory. Missing
        model files are an :class:`~memlineage.UnavailableError` naming the path and the script.
        Opening embeds the entries that have no stored vector yet (written without the model).
        The vector index of a file store is saved in ``<store file>.vectors/`` (the CLI's place)
        and loaded from there by the next open when it still checks; a store in RAM keeps it in
        memory. :meth:`vector_index_status` says what it holds.
        """
        location = os.fspath(path) if path is not None else None
        attach, model_dir = embedder_args(embedder)
        return cls(
            _native.Handle.open(
                location,
                None if tau is None else weight_text(tau),
                fallback,
                create,
                lexical_index,
                attach,
                model_dir,
            )
        )

    # -- life cycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Closes the store: later calls raise :class:`~memlineage.ClosedError`; calls in
        flight in other threads finish first, so nothing is cut short."""
        self._h.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._h.closed

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def location(self) -> str:
        """The store file (``memory:`` for a store in RAM)."""
        return self._h.location

    @property
    def created(self) -> bool:
        """Whether :meth:`open` created the store."""
        return self._h.created

    @property
    def settings(self) -> dict[str, Any]:
        """``origin`` (checkpoint origin line), ``tau``, ``fallback`` and ``operator``."""
        origin, tau_bp, fallback, operator = self._h.settings()
        return {
            "origin": origin,
            "tau": tau_bp / 10_000,
            "fallback": fallback,
            "operator": operator,
        }

    def __len__(self) -> int:
        """Number of entries in the log (control records included)."""
        return self._h.size()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<memlineage.Memory {self.location!r} ({state})>"

    # -- writing --------------------------------------------------------------------------

    @checked
    def add(
        self,
        content: str | bytes,
        *,
        principal: str = "agent",
        kind: str | None = None,
        parents: Iterable[ParentSpec] | None = None,
        scope: str = DEFAULT_SCOPE,
        source: str | None = None,
        metadata: Mapping[str, str] | None = None,
        context_hash: str | None = None,
    ) -> Entry:
        """Writes one signed entry and returns it as stored.

        - ``principal``: the writer; registered, not revoked, its key in ``keys/``.
        - ``kind``: ``user_input``, ``tool_output``, ``observation`` or ``derived``; default
          ``derived`` with parents, else ``observation`` (``tool_output`` for an external
          writer).
        - ``parents``: entries this one is derived from, each an entry (weight 1) or
          ``(entry, weight)``; the label is computed from their effective labels and signed.
        - ``source``: where the content came from (its SHA-256 is signed as h_src).
        - ``context_hash``: h_ctx, the hash of exactly the context the writer saw
          (:attr:`Recall.context_hash`); :class:`~memlineage.Session` fills it for you.
        """
        return entry_from_native(
            self._h.write(
                content,
                principal,
                kind,
                _parents(parents),
                scope,
                source,
                context_hash,
                list((metadata or {}).items()),
            )
        )

    @checked
    def add_many(self, items: Iterable[Mapping[str, Any]]) -> list[Entry]:
        """Writes several entries in one transaction with one fsync (group commit), all or
        nothing. Each item holds the arguments of :meth:`add` by name (``content`` required;
        parents must already be in the log)."""
        batch = []
        for item in items:
            unknown = set(item) - _ADD_KEYS
            if unknown or "content" not in item:
                raise InputError(
                    f"an item of add_many takes the arguments of add(): content (required), "
                    f"{', '.join(sorted(_ADD_KEYS - {'content'}))}; got {sorted(item)}"
                )
            batch.append(
                (
                    item["content"],
                    item.get("principal", "agent"),
                    item.get("kind"),
                    _parents(item.get("parents")),
                    item.get("scope", DEFAULT_SCOPE),
                    item.get("source"),
                    item.get("context_hash"),
                    list((item.get("metadata") or {}).items()),
                )
            )
        return [entry_from_native(t) for t in self._h.write_many(batch)]

    # -- reading --------------------------------------------------------------------------

    @checked
    def search(
        self,
        query: str,
        *,
        scope: str | None = None,
        limit: int = 8,
        mode: SearchModeLike = "lexical",
    ) -> Recall:
        """Search within ``scope`` and the scopes below it (default ``default``), at most
        ``limit`` entries, best first. ``mode`` is the ranking: ``"lexical"`` (BM25, the
        default), ``"semantic"`` (by meaning: a question in other words than the memory) or
        ``"hybrid"`` (both, fused); the last two need the store opened with ``embedder=``
        (:class:`~memlineage.InputError` otherwise, saying how). Every result is verified
        before it is returned — signature, signer, inclusion in the signed checkpoint, label
        against its parents, signed scope — whatever the mode, and forgotten entries never
        are. ``render()`` gives the prompt rendering and ``context_hash`` its hash."""
        return recall_from_native(
            self._h.search(query, scope or DEFAULT_SCOPE, limit, mode_name(mode))
        )

    @property
    def embedding_model(self) -> str | None:
        """The attached embedding model's id (``all-MiniLM-L6-v2@…``), ``None`` without one."""
        return self._h.embedding_model

    def vector_index_status(self) -> VectorIndexStatus | None:
        """What the vector index holds and where its vectors came from (loaded from the store,
        embedded here, refused rows, the saved index loaded or rebuilt); ``None`` when the
        store was opened without ``embedder``."""
        return status_from_native(self._h.vector_index_status())

    def save_vector_index(self) -> str:
        """Saves the vector index in ``<store file>.vectors/`` now, so that the next open
        loads it instead of rebuilding it (opening saves it itself when it rebuilt it, or
        caught up 10,000 entries or more): after a long run of writes, or before the process
        stops. Returns the directory. An :class:`~memlineage.InputError` without an embedder or
        for a store in RAM."""
        return self._h.save_vector_index()

    @checked
    def recall(self, entries: Iterable[EntryRef]) -> Recall:
        """The given entries, verified and rendered in the order given (a prompt's context).
        Raises :class:`~memlineage.NotFoundError` for an id not in the log."""
        return recall_from_native(self._h.recall([entry_id(e) for e in entries]))

    @checked
    def get(self, entry: EntryRef) -> Entry:
        """One entry, after checking its signer against the registry, its signature, its
        content against the signed hash and its inclusion in the current tree. Raises
        :class:`~memlineage.IntegrityError` when any check fails (never trust such an entry;
        run :meth:`verify`), :class:`~memlineage.NotFoundError` when there is no such entry.
        Forgotten entries are returned (see :attr:`Entry.forgotten_by`)."""
        eid = entry_id(entry)
        t, problems = self._h.get(eid)
        e = entry_from_native(t)
        if problems:
            raise IntegrityError(
                f"entry {e.id} at index {e.index} fails verification ({'; '.join(problems)}): "
                "do not trust it; run `memlineage verify`"
            )
        return e

    @checked
    def log(self, start: int = 0, limit: int = 100) -> list[Entry]:
        """Entries in log order from index ``start`` (control records included), as stored:
        use :meth:`get` or :meth:`verify` to verify them."""
        return [entry_from_native(t) for t in self._h.log(start, limit)]

    @checked
    def history(self, entry: EntryRef, *, descendants: bool = False, depth: int = 16) -> Lineage:
        """The lineage of an entry: its ancestors (or, with ``descendants``, what it shaped)
        up to ``depth`` edges away, every edge with its weight, the taint path, and why the
        entry has its label; ``to_dot()`` / ``to_mermaid()`` draw it."""
        t = self._h.lineage(entry_id(entry), descendants, depth)
        return lineage_from_native(t, "descendants" if descendants else "ancestors")

    # -- forgetting and distrust -----------------------------------------------------------

    @checked
    def delete(
        self,
        entry: EntryRef,
        *,
        erase: bool = False,
        reason: str | None = None,
        signer: str | None = None,
    ) -> Entry:
        """Forgets an entry with a signed tombstone (by ``signer``, a trusted principal;
        default the operator) and returns the tombstone. Retrieval never returns a forgotten
        entry; with ``erase`` its content bytes are deleted too, while its leaf and every
        proof still verify. History is never rewritten."""
        return entry_from_native(self._h.forget(entry_id(entry), erase, reason or "", signer))

    @checked
    def distrust(
        self,
        entry: EntryRef | None = None,
        *,
        principal: str | None = None,
        reason: str | None = None,
        signer: str | None = None,
    ) -> Entry:
        """Retroactively distrusts one entry, or (``principal=``) every entry a principal
        wrote and will write: their effective label becomes ``EXTERNAL`` and every
        descendant's is recomputed, without rewriting history. Returns the signed record."""
        if (entry is None) == (principal is None):
            raise InputError("give an entry or principal=NAME to distrust (one of them)")
        eid = None if entry is None else entry_id(entry)
        return entry_from_native(self._h.distrust(eid, principal, reason or "", signer))

    # -- audit ------------------------------------------------------------------------------

    def verify(self, progress: Callable[[int, int], object] | None = None) -> AuditReport:
        """The full audit of the store, trusting nothing it reads: every leaf, signer,
        signature, content hash, label, Merkle node, derived row and the latest checkpoint.
        ``progress(done, total)`` is called as it goes. Check :attr:`AuditReport.ok` (or call
        :meth:`AuditReport.raise_for_problems`)."""
        return audit_from_native(self._h.verify(progress))

    @checked
    def checkpoint(self) -> Checkpoint:
        """Signs and stores a checkpoint of the current tree with the operator's key (C2SP
        tlog-checkpoint)."""
        return checkpoint_from_note(self._h.checkpoint())

    # -- the gate ---------------------------------------------------------------------------

    @checked
    def gate(
        self,
        policy: Policy,
        call: Any,
        context: Iterable[EntryRef],
        *,
        cite: Mapping[str, EntryRef | Iterable[EntryRef]] | None = None,
        repair: bool = False,
        repair_query: str | None = None,
        scope: str | None = None,
        recorder: str = "agent",
        sources: Mapping[EntryRef, str] | None = None,
    ) -> Decision:
        """Decides whether a tool call may be dispatched, and logs the decision as a signed
        ``gate_decision`` entry by ``recorder``.

        ``call`` is a tool call as OpenAI or Anthropic produce it (a dict, a JSON string, or
        the SDK's object); ``context`` the entries in the prompt, the user's request included
        (:class:`~memlineage.Session` tracks them for you); ``cite`` explicit citations,
        parameter → entries. With ``repair`` a denied call is repaired with values of trusted
        provenance, from the context and then from the store (searched with ``repair_query``,
        default the user's request, within ``scope``).

        ``sources`` says which context entries the integration read from a document, entry →
        the document's name (the tool call's argument that named it, captured when the call was
        made — never taken from the entry's content): a call denied only by values from a
        document the user's trusted request names is then a ``confirm`` (the policy must allow
        it; ``docs/gate.md``, "Confirm"). :class:`~memlineage.Session` records them for you.

        Dispatch only when :attr:`Decision.allowed`, with :attr:`Decision.arguments`; a
        ``confirm`` only after the user approved it. A call the gate cannot judge raises
        :class:`~memlineage.GateError`: never dispatch it.
        """
        citations: list[tuple[str, list[str]]] = []
        for param, refs in (cite or {}).items():
            if isinstance(refs, (str, Entry)):
                citations.append((param, [entry_id(refs)]))
            else:
                citations.append((param, [entry_id(r) for r in refs]))
        d, record = self._h.gate(
            policy._native,
            call_json(call),
            [entry_id(e) for e in context],
            citations,
            repair,
            repair_query,
            scope or DEFAULT_SCOPE,
            recorder,
            [(entry_id(e), doc) for e, doc in (sources or {}).items()],
        )
        return decision_from_native(d, record)


__all__ = ["EntryRef", "Memory", "ParentSpec", "Principals", "Weight", "entry_id"]
