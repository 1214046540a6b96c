"""asyncio: :class:`AsyncMemory` runs each call of a :class:`~memlineage.Memory` in a thread
pool, so signing, verification, search and the gate never block the event loop (they release
the GIL, so they also run beside the loop's own Python code)."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Executor
from typing import Any, TypeVar

from ._types import AuditReport, Checkpoint, Entry, Lineage, Principal, PrincipalChange, Recall
from .gate import Decision, Policy
from .labels import TrustClass
from .memory import EntryRef, Memory, ParentSpec, Principals, Weight
from .search import EmbedderSpec, SearchModeLike, VectorIndexStatus

T = TypeVar("T")


class _Runner:
    __slots__ = ("_executor",)

    def __init__(self, executor: Executor | None) -> None:
        self._executor = executor

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))


class AsyncPrincipals:
    """:class:`~memlineage.Principals`, awaitable."""

    __slots__ = ("_p", "_r")

    def __init__(self, memory: Memory, runner: _Runner) -> None:
        self._p = memory.principals
        self._r = runner

    async def list(self) -> list[Principal]:
        return await self._r.run(self._p.list)

    async def get(self, name: str) -> Principal | None:
        return await self._r.run(self._p.get, name)

    async def add(self, name: str, trust: TrustClass | str) -> PrincipalChange:
        return await self._r.run(self._p.add, name, trust)

    async def rotate(self, name: str) -> PrincipalChange:
        return await self._r.run(self._p.rotate, name)

    async def revoke(self, name: str, reason: str) -> PrincipalChange:
        return await self._r.run(self._p.revoke, name, reason)


class AsyncMemory:
    """A :class:`~memlineage.Memory` for asyncio: the same calls, awaitable, each run in
    ``executor`` (default: the loop's default thread pool).

    Example::

        async with await AsyncMemory.open("memory:") as m:
            e = await m.add("hello")
    """

    __slots__ = ("_r", "memory", "principals")

    def __init__(self, memory: Memory, executor: Executor | None = None) -> None:
        #: The synchronous handle underneath (shareable with threads).
        self.memory = memory
        self._r = _Runner(executor)
        self.principals = AsyncPrincipals(memory, self._r)

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        tau: Weight | None = None,
        fallback: str | None = None,
        create: bool = True,
        lexical_index: bool = False,
        embedder: EmbedderSpec | None = None,
        executor: Executor | None = None,
    ) -> AsyncMemory:
        """:meth:`Memory.open <memlineage.Memory.open>`, in the thread pool."""
        runner = _Runner(executor)
        m = await runner.run(
            Memory.open,
            path,
            tau=tau,
            fallback=fallback,
            create=create,
            lexical_index=lexical_index,
            embedder=embedder,
        )
        return cls(m, executor)

    async def close(self) -> None:
        await self._r.run(self.memory.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self.memory.closed

    async def add(
        self,
        content: str | bytes,
        *,
        principal: str = "agent",
        kind: str | None = None,
        parents: Iterable[ParentSpec] | None = None,
        scope: str = "default",
        source: str | None = None,
        metadata: Mapping[str, str] | None = None,
        context_hash: str | None = None,
    ) -> Entry:
        return await self._r.run(
            self.memory.add,
            content,
            principal=principal,
            kind=kind,
            parents=parents,
            scope=scope,
            source=source,
            metadata=metadata,
            context_hash=context_hash,
        )

    async def search(
        self,
        query: str,
        *,
        scope: str | None = None,
        limit: int = 8,
        mode: SearchModeLike = "lexical",
    ) -> Recall:
        return await self._r.run(self.memory.search, query, scope=scope, limit=limit, mode=mode)

    @property
    def embedding_model(self) -> str | None:
        """The attached embedding model's id, ``None`` without one."""
        return self.memory.embedding_model

    async def vector_index_status(self) -> VectorIndexStatus | None:
        return await self._r.run(self.memory.vector_index_status)

    async def save_vector_index(self) -> str:
        return await self._r.run(self.memory.save_vector_index)

    async def recall(self, entries: Iterable[EntryRef]) -> Recall:
        return await self._r.run(self.memory.recall, list(entries))

    async def get(self, entry: EntryRef) -> Entry:
        return await self._r.run(self.memory.get, entry)

    async def log(self, start: int = 0, limit: int = 100) -> list[Entry]:
        return await self._r.run(self.memory.log, start, limit)

    async def history(
        self, entry: EntryRef, *, descendants: bool = False, depth: int = 16
    ) -> Lineage:
        return await self._r.run(self.memory.history, entry, descendants=descendants, depth=depth)

    async def delete(
        self,
        entry: EntryRef,
        *,
        erase: bool = False,
        reason: str | None = None,
        signer: str | None = None,
    ) -> Entry:
        return await self._r.run(
            self.memory.delete, entry, erase=erase, reason=reason, signer=signer
        )

    async def distrust(
        self,
        entry: EntryRef | None = None,
        *,
        principal: str | None = None,
        reason: str | None = None,
        signer: str | None = None,
    ) -> Entry:
        return await self._r.run(
            self.memory.distrust, entry, principal=principal, reason=reason, signer=signer
        )

    async def verify(self, progress: Callable[[int, int], object] | None = None) -> AuditReport:
        """The full audit; ``progress`` is called from the worker thread."""
        return await self._r.run(self.memory.verify, progress)

    async def checkpoint(self) -> Checkpoint:
        return await self._r.run(self.memory.checkpoint)

    async def gate(
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
        return await self._r.run(
            self.memory.gate,
            policy,
            call,
            list(context),
            cite=cite,
            repair=repair,
            repair_query=repair_query,
            scope=scope,
            recorder=recorder,
            sources=sources,
        )


def _document(cls: type, sync: type, names: tuple[str, ...]) -> None:
    """Gives each awaitable method the docstring of the call it awaits."""
    for name in names:
        method = getattr(cls, name)
        if method.__doc__ is None:
            method.__doc__ = f"Awaitable ``{sync.__name__}.{name}``.\n\n" + (
                getattr(sync, name).__doc__ or ""
            )


_document(
    AsyncMemory,
    Memory,
    (
        "add",
        "search",
        "vector_index_status",
        "save_vector_index",
        "recall",
        "get",
        "log",
        "history",
        "delete",
        "distrust",
        "checkpoint",
        "gate",
        "close",
    ),
)
_document(AsyncPrincipals, Principals, ("list", "get", "add", "rotate", "revoke"))

__all__ = ["AsyncMemory", "AsyncPrincipals"]
