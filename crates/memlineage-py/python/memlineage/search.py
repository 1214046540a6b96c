"""Search modes and the vector index behind semantic search (``docs/retrieval.md``).

``Memory.search(query, mode=...)`` ranks ``lexical`` (BM25, the default, no model),
``semantic`` (cosine similarity of all-MiniLM-L6-v2 embeddings) or ``hybrid`` (both, fused by
weighted reciprocal rank fusion). The last two need the model attached when the store is opened
(``Memory.open(..., embedder="default")``). Whatever the mode, an index only proposes
candidates: every result is verified before it is returned, so a tampered index can hide or
misrank an entry, never inject one or change its label.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import Any, Literal

from ._record import Record
from .errors import InputError


class SearchMode(str, enum.Enum):
    """The ranking of a search (``memlineage::search::SearchMode``); its value is the name the
    CLI's ``search --mode`` and the HTTP service take."""

    #: BM25 over the entries' words; needs no model.
    LEXICAL = "lexical"
    #: Cosine similarity of the query's and the entries' embeddings (needs the model).
    SEMANTIC = "semantic"
    #: Both rankings fused by weighted reciprocal rank fusion (needs the model).
    HYBRID = "hybrid"

    def __str__(self) -> str:
        return self.value


#: A mode as the typed API takes it: a :class:`SearchMode` or its name.
SearchModeName = Literal["lexical", "semantic", "hybrid"]
SearchModeLike = SearchMode | SearchModeName

#: What ``Memory.open(embedder=...)`` takes: ``"default"`` (the model that
#: ``scripts/fetch-embedding-model.sh`` installs, or ``$MEMLINEAGE_EMBEDDING_MODEL``), or a
#: directory holding ``model.safetensors``, ``tokenizer.json`` and ``config.json``.
EmbedderSpec = Literal["default"] | str | os.PathLike[str]


def mode_name(mode: SearchModeLike) -> str:
    """The name passed to the native module; an unknown name is refused there, with the three
    it accepts."""
    if isinstance(mode, SearchMode):
        return mode.value
    if isinstance(mode, str):
        return mode
    raise InputError(
        f"a search mode is 'lexical', 'semantic' or 'hybrid' (or a SearchMode), "
        f"not {type(mode).__name__}"
    )


def embedder_args(embedder: EmbedderSpec | None) -> tuple[bool, str | None]:
    """``(attach, directory)`` for the native open: ``"default"`` is the default model, any
    other string or path a directory (``Path("default")`` is the directory of that name)."""
    if embedder is None:
        return False, None
    path = os.fspath(embedder) if isinstance(embedder, os.PathLike) else embedder
    if isinstance(path, str) and path:
        return True, None if path == "default" and path is embedder else path
    raise InputError(f'embedder is "default" or the directory of the model, not {embedder!r}')


@dataclass(frozen=True, slots=True)
class RejectedEmbedding(Record):
    """A stored embedding the index refused (its binding to the entry, its model or its shape
    did not check): the entry was embedded again and the row replaced."""

    #: Leaf index of the entry.
    index: int
    reason: str


@dataclass(frozen=True, slots=True)
class VectorIndexStatus(Record):
    """What the vector index of a :class:`~memlineage.Memory` holds and where its vectors came
    from (``Memory::vector_index_status`` in Rust)."""

    #: The attached model's id, ``all-MiniLM-L6-v2@`` and the first 12 hex digits of the
    #: weights' SHA-256.
    model: str
    #: Entries in the index.
    indexed: int
    #: Vectors read from the store (their binding to the entry checked).
    loaded: int
    #: Vectors computed by the model in this process (no usable stored one).
    embedded: int
    #: Stored vectors refused, and why.
    rejected: tuple[RejectedEmbedding, ...]
    #: The last failure to embed or store the vectors of entries just written (they are
    #: logged; the next search embeds what is missing).
    last_error: str | None
    #: With a file store: ``"loaded: N entries saved, M caught up"``, or ``"rebuilt: …"`` and
    #: why the saved index was not used.
    snapshot: str | None
    #: Bytes the index holds in memory.
    bytes: int | None
    #: Where the index is saved (``<store file>.vectors``), ``None`` for a store in RAM.
    directory: str | None


def status_from_native(d: dict[str, Any] | None) -> VectorIndexStatus | None:
    """A :class:`VectorIndexStatus` from the native dict."""
    if d is None:
        return None
    return VectorIndexStatus(
        model=d["model"],
        indexed=d["indexed"],
        loaded=d["loaded"],
        embedded=d["embedded"],
        rejected=tuple(RejectedEmbedding(i, r) for i, r in d["rejected"]),
        last_error=d["last_error"],
        snapshot=d["snapshot"],
        bytes=d["bytes"],
        directory=d["directory"],
    )


__all__ = [
    "EmbedderSpec",
    "RejectedEmbedding",
    "SearchMode",
    "SearchModeLike",
    "SearchModeName",
    "VectorIndexStatus",
]
