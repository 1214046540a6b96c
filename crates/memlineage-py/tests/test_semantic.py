"""Semantic and hybrid search from Python, against the real embedding model (all-MiniLM-L6-v2;
skipped with the reason when its files are missing, failed under CI=1): a paraphrase found that
BM25 misses, the saved vector index beside a file store, and a tampered index directory that
can hide entries but never inject, move or relabel one. The errors without a model need none."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memlineage import (
    AsyncMemory,
    InputError,
    Label,
    Memory,
    SearchMode,
    Session,
    TrustMap,
    UnavailableError,
)

DENTIST = "Dr. Kowalski has been the dentist I see every six months since 2019."
FACTS = [
    DENTIST,
    "The wifi password at the cottage is hunter2-lakeside.",
    "Bob's flight to Oslo leaves on Friday at 09:40 from gate 12.",
    "The rent of 1100.00 is due on the first day of each month.",
    "I am allergic to peanuts and cashews.",
    "The garage door code is 4471.",
]
# No word in common with DENTIST: BM25 cannot find it, an embedding can.
PARAPHRASE = "who takes care of my teeth"


@pytest.fixture(scope="module")
def facts(embedder: None) -> Iterator[Memory]:
    """A store in RAM with the model attached and FACTS written by `agent`, plus an e-mail."""
    m = Memory.open("memory:", embedder="default")
    m.principals.add("mail", "external")
    for f in FACTS:
        m.add(f)
    m.add("Reminder from your dental clinic: call 555-0100 to move the check-up.", principal="mail")
    yield m
    m.close()


# -- errors that need no model -------------------------------------------------------------------


def test_an_unknown_mode_is_an_input_error(mem: Memory) -> None:
    with pytest.raises(InputError, match="`lexical`, `semantic` or `hybrid`"):
        mem.search("rent", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="search mode"):
        mem.search("rent", mode=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["semantic", "hybrid", SearchMode.HYBRID])
def test_semantic_without_a_model_says_how_to_attach_one(mem: Memory, mode: Any) -> None:
    with pytest.raises(InputError) as e:
        mem.search("rent", mode=mode)
    assert 'embedder="default"' in str(e.value) and "fetch-embedding-model.sh" in str(e.value)
    assert mem.embedding_model is None and mem.vector_index_status() is None
    with pytest.raises(InputError, match="without the embedding model"):
        mem.save_vector_index()
    # Lexical needs none, by name or by enum.
    assert mem.search("rent", mode=SearchMode.LEXICAL) == mem.search("rent")


def _model_error(**open_args: Any) -> str:
    with pytest.raises(UnavailableError) as e:
        Memory.open("memory:", **open_args)
    message = str(e.value)
    if "cargo feature `models`" in message:
        from .conftest import need

        need("a wheel built with the cargo feature `models`", message)
    return message


def test_missing_model_files_name_the_path_and_the_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-model-here"
    empty.mkdir()
    for spec in (empty, str(empty)):
        message = _model_error(embedder=spec)
        assert str(empty) in message and "scripts/fetch-embedding-model.sh" in message
    # "default" follows $MEMLINEAGE_EMBEDDING_MODEL, and names it.
    monkeypatch.setenv("MEMLINEAGE_EMBEDDING_MODEL", str(empty))
    message = _model_error(embedder="default")
    assert str(empty) in message and "MEMLINEAGE_EMBEDDING_MODEL" in message
    # A path named `default` is that directory, not the default model.
    monkeypatch.chdir(tmp_path)
    assert "default" in _model_error(embedder=Path("default"))


@pytest.mark.parametrize("spec", ["", 3, b"/models"])
def test_a_malformed_embedder_is_an_input_error(spec: Any) -> None:
    with pytest.raises(InputError, match="embedder"):
        Memory.open("memory:", embedder=spec)


# -- with the model --------------------------------------------------------------------------------


def test_semantic_finds_a_paraphrase_that_lexical_misses(facts: Memory) -> None:
    lexical = facts.search(PARAPHRASE)
    assert DENTIST not in [h.text for h in lexical]
    semantic = facts.search(PARAPHRASE, mode="semantic", limit=3)
    assert semantic[0].text == DENTIST
    # Verified like any result: signed by `agent`, trusted, in the default scope.
    assert semantic[0].writer == "agent" and semantic[0].effective_label is Label.TRUSTED
    assert not semantic.dropped and "<memory" in semantic.render()


def test_hybrid_ranks_by_meaning_and_by_rare_terms(facts: Memory) -> None:
    assert facts.search(PARAPHRASE, mode=SearchMode.HYBRID, limit=3)[0].text == DENTIST
    # A rare term (a code) that BM25 pins down.
    assert "4471" in (facts.search("4471", mode="hybrid", limit=3)[0].text or "")
    # The e-mail about the dentist comes back EXTERNAL, whatever found it.
    for mode in ("semantic", "hybrid"):
        hits = facts.search("dental check-up appointment", mode=mode, limit=8)
        mail = [h for h in hits if h.writer == "mail"]
        assert mail and all(h.effective_label is Label.EXTERNAL for h in mail)


def test_the_status_of_an_index_in_ram(facts: Memory) -> None:
    s = facts.vector_index_status()
    assert s is not None and facts.embedding_model is not None
    assert s.model == facts.embedding_model and s.model.startswith("all-MiniLM-L6-v2@")
    assert s.indexed == len(FACTS) + 1 and s.embedded == s.indexed and s.loaded == 0
    assert s.directory is None and s.snapshot is None and not s.rejected
    assert s.bytes is not None and s.bytes > 0
    assert s.to_dict()["indexed"] == s.indexed
    with pytest.raises(InputError, match="not a file"):
        facts.save_vector_index()


def test_a_session_recalls_by_meaning(facts: Memory) -> None:
    s = Session(facts, trust=TrustMap(user="agent", tools={}), scope="default")
    r = s.recall(PARAPHRASE, mode="semantic", limit=1)
    assert [e.text for e in r] == [DENTIST] and s.context[-1] == r[0].id


def test_async_open_and_search(embedder: None) -> None:
    import asyncio

    async def run() -> tuple[str | None, str | None]:
        async with await AsyncMemory.open("memory:", embedder="default") as m:
            await m.add(DENTIST)
            await m.add(FACTS[1])
            hits = await m.search(PARAPHRASE, mode="semantic", limit=1)
            status = await m.vector_index_status()
            return hits[0].text, None if status is None else status.model

    text, model = asyncio.run(run())
    assert text == DENTIST and model is not None


# -- a file store: the saved index, and what tampering with it can do ------------------------------


def _write(path: Path) -> Memory:
    """A file store with Alice's and Bob's facts in their own scopes."""
    m = Memory.open(path, embedder="default")
    for who in ("alice", "bob"):
        name = who.capitalize()
        m.add(f"{name}'s dentist is Dr. {name}son on Elm Street.", scope=f"acme/{who}")
        m.add(f"{name} is learning to play the cello.", scope=f"acme/{who}")
        m.add(f"{name}'s car is a blue hatchback.", scope=f"acme/{who}")
    return m


def _vectors(path: Path) -> Path:
    return Path(f"{path}.vectors")


def test_the_index_is_saved_beside_the_store_and_loaded(embedder: None, store_path: Path) -> None:
    with _write(store_path) as m:
        first = m.vector_index_status()
        assert first is not None and (first.snapshot or "").startswith("rebuilt: ")
        assert first.directory == str(_vectors(store_path))
        saved = m.save_vector_index()
    assert Path(saved) == _vectors(store_path)
    assert {p.name for p in _vectors(store_path).iterdir()} == {"vectors.usearch", "vectors.json"}
    with Memory.open(store_path, embedder="default") as m:
        s = m.vector_index_status()
        assert s is not None and s.snapshot == "loaded: 9 entries saved, 0 caught up"
        assert s.embedded == 0 and s.indexed == 6
        hits = m.search("Which doctor looks after Alice's teeth?", scope="acme", mode="semantic")
        assert hits[0].scope == "acme/alice" and "dentist" in (hits[0].text or "")
    # A handle without the model still searches lexically, and leaves the index alone.
    with Memory.open(store_path) as m:
        assert m.search("cello", scope="acme/bob")[0].text == "Bob is learning to play the cello."


def _edit(meta: Path, edit: Any) -> None:
    d = json.loads(meta.read_text())
    edit(d)
    meta.write_text(json.dumps(d))


def test_a_forged_description_cannot_move_an_entry_into_a_scope(
    embedder: None, store_path: Path
) -> None:
    with _write(store_path) as m:
        m.save_vector_index()

    def swap(d: dict[str, Any]) -> None:
        names = {"acme/alice": "acme/bob", "acme/bob": "acme/alice"}
        d["scopes"] = [names.get(s, s) for s in d["scopes"]]

    _edit(_vectors(store_path) / "vectors.json", swap)
    with Memory.open(store_path, embedder="default") as m:
        s = m.vector_index_status()
        assert s is not None and (s.snapshot or "").startswith("loaded: ")
        r = m.search("Who is Bob's dentist?", scope="acme/alice", mode="semantic", limit=3)
        # The forged index proposes Bob's entries for Alice's scope; verification drops each.
        assert not [h for h in r if not h.scope.startswith("acme/alice")]
        assert r.dropped and all("signed scope `acme/bob`" in d.reason for d in r.dropped)
        assert "Bob" not in r.render()
        for mode in ("semantic", "hybrid"):
            for h in m.search("dentist cello car", scope="acme", mode=mode):
                assert h.effective_label == m.get(h).effective_label


def test_an_altered_or_foreign_index_is_rebuilt(
    embedder: None, store_path: Path, tmp_path: Path
) -> None:
    with _write(store_path) as m:
        m.save_vector_index()
    index = _vectors(store_path) / "vectors.usearch"
    blob = bytearray(index.read_bytes())
    blob[len(blob) // 2] ^= 0x40
    index.write_bytes(bytes(blob))
    with Memory.open(store_path, embedder="default") as m:
        s = m.vector_index_status()
        assert s is not None and "does not match its description" in (s.snapshot or "")
        assert m.search("Alice's teeth", scope="acme/alice", mode="semantic")[0].text == (
            "Alice's dentist is Dr. Aliceson on Elm Street."
        )
    # The index of another store, copied in.
    other = tmp_path / "other" / "store.db"
    with Memory.open(other, embedder="default") as o:
        for i in range(6):
            o.add(f"an unrelated note {i}")
        o.save_vector_index()
    for f in ("vectors.usearch", "vectors.json"):
        shutil.copy(_vectors(other) / f, _vectors(store_path) / f)
    with Memory.open(store_path, embedder="default") as m:
        s = m.vector_index_status()
        assert s is not None and (s.snapshot or "").startswith("rebuilt: "), s
        assert "unrelated" not in m.search("note", scope="acme", mode="hybrid").render()


def test_an_old_index_cannot_bring_back_a_forgotten_entry(embedder: None, store_path: Path) -> None:
    m = _write(store_path)
    m.save_vector_index()
    old = store_path.parent / "old-vectors"
    shutil.copytree(_vectors(store_path), old)
    gone = m.search("Bob's car", scope="acme/bob", mode="semantic", limit=1)[0]
    assert "hatchback" in (gone.text or "")
    m.delete(gone, erase=True)
    m.close()
    shutil.rmtree(_vectors(store_path))
    shutil.copytree(old, _vectors(store_path))
    with Memory.open(store_path, embedder="default") as m:
        s = m.vector_index_status()
        assert s is not None and (s.snapshot or "").startswith("loaded: ")
        for mode in ("semantic", "hybrid"):
            r = m.search("Bob's car", scope="acme/bob", mode=mode)
            assert gone.id not in [h.id for h in r] and "hatchback" not in r.render()
