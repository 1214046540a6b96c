//! A saved vector index (`Memory::with_embedder_saved`, `memory/semantic/snapshot.rs`) with
//! the real embedding model (feature `models`; `scripts/fetch-embedding-model.sh`; without
//! the model files these tests print why and pass, except under `CI`).
//!
//! A snapshot that checks is loaded and caught up with what was appended and forgotten since;
//! one that does not (altered index file, another log, a longer log, another model, a broken
//! description) is rebuilt, with the reason reported, and the handle answers the same; a
//! snapshot whose description was forged around an intact index can hide or misrank entries,
//! never put one in a scope it was not signed into.
#![cfg(feature = "models")]

mod common;

use common::{embedder, p, setup_with};
use memlineage::search::SearchMode;
use memlineage::search::TextEmbedder;
use memlineage::{Memory, SqliteStore, WriteRequest};
use memlineage_core::entry::{EntryKind, Scope};
use std::path::Path;
use std::sync::Arc;

const FACTS: &[(&str, &str)] = &[
    (
        "acme/alice",
        "Alice's dentist is Dr. Okafor, at the clinic on Linden Street.",
    ),
    (
        "acme/alice",
        "Alice pays 850 euros rent each month to the landlord, Moreau.",
    ),
    ("acme/alice", "Alice's favourite football team is Benfica."),
    (
        "acme/bob",
        "Bob's dentist is Dr. Tanaka, at the clinic on Harbour Road.",
    ),
    (
        "acme/bob",
        "Bob is learning to play the cello on Thursdays.",
    ),
];

/// A file store holding [`FACTS`], written with the model attached (vectors stored).
fn store(path: &Path, e: Arc<dyn TextEmbedder>) {
    let mem = setup_with(SqliteStore::open(path).unwrap())
        .with_embedder(e)
        .unwrap();
    for (scope, text) in FACTS {
        mem.write(
            WriteRequest::new(&p("agent"), EntryKind::Observation, *text)
                .with_scope(Scope::new(scope).unwrap()),
        )
        .unwrap();
    }
    mem.checkpoint().unwrap();
}

fn open_saved(path: &Path, e: Arc<dyn TextEmbedder>, dir: &Path) -> Memory {
    let mem = Memory::open(SqliteStore::open(path).unwrap())
        .unwrap()
        .with_embedder_saved(e, dir)
        .unwrap();
    common::load_fixture_keys(&mem);
    mem
}

fn snapshot_note(mem: &Memory) -> String {
    mem.vector_index_status()
        .unwrap()
        .snapshot
        .unwrap_or_default()
}

fn nearest(mem: &Memory, query: &str, scope: &str) -> Vec<String> {
    mem.search_with(query, &Scope::new(scope).unwrap(), 1, SearchMode::Semantic)
        .unwrap()
        .entries
        .iter()
        .map(|v| v.text().unwrap())
        .collect()
}

const ALICE_TEETH: &str = "Which doctor takes care of Alice's teeth?";

#[test]
fn a_saved_index_is_loaded_and_caught_up() {
    let Some(e) = embedder() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (path, vectors) = (dir.path().join("s.db"), dir.path().join("vectors"));
    store(&path, e.clone());
    // No snapshot yet: built from the stored vectors, then saved.
    let mem = open_saved(&path, e.clone(), &vectors);
    assert!(
        snapshot_note(&mem).starts_with("rebuilt: no snapshot"),
        "{}",
        snapshot_note(&mem)
    );
    assert!(vectors.join("vectors.usearch").exists() && vectors.join("vectors.json").exists());
    let size = mem.size().unwrap();
    drop(mem);
    // Loaded: no stored vector read, none computed.
    let mem = open_saved(&path, e.clone(), &vectors);
    let status = mem.vector_index_status().unwrap();
    assert_eq!(
        status.snapshot.as_deref(),
        Some(format!("loaded: {size} entries saved, 0 caught up").as_str())
    );
    assert_eq!((status.indexed, status.loaded, status.embedded), (5, 0, 0));
    assert_eq!(nearest(&mem, ALICE_TEETH, "acme/alice"), [FACTS[0].1]);
    // Appended and forgotten since the snapshot: caught up on the next open.
    let cat = "Alice's cat is called Miso, a grey tabby.";
    mem.write(
        WriteRequest::new(&p("agent"), EntryKind::Observation, cat)
            .with_scope(Scope::new("acme/alice").unwrap()),
    )
    .unwrap();
    let dentist = mem
        .search_with(
            ALICE_TEETH,
            &Scope::new("acme/alice").unwrap(),
            1,
            SearchMode::Semantic,
        )
        .unwrap()
        .entries[0]
        .entry
        .id();
    mem.forget(&p("user"), &dentist, false, "moved away")
        .unwrap();
    drop(mem);
    let mem = open_saved(&path, e.clone(), &vectors);
    let note = snapshot_note(&mem);
    assert!(
        note.starts_with(&format!("loaded: {size} entries saved, ")),
        "{note}"
    );
    assert_eq!(
        nearest(&mem, "What is the name of Alice's pet?", "acme/alice"),
        [cat]
    );
    assert_ne!(nearest(&mem, ALICE_TEETH, "acme/alice"), [FACTS[0].1]);
    // Saving again covers the new entries.
    mem.save_vector_index(&vectors).unwrap();
    let size = mem.size().unwrap();
    drop(mem);
    let mem = open_saved(&path, e, &vectors);
    assert_eq!(
        snapshot_note(&mem),
        format!("loaded: {size} entries saved, 0 caught up")
    );
    assert_eq!(mem.vector_index_status().unwrap().indexed, 5);
}

/// Rewrites the snapshot description at `meta` through `edit` (the index file untouched).
fn edit_description(meta: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut described: serde_json::Value =
        serde_json::from_slice(&std::fs::read(meta).unwrap()).unwrap();
    edit(&mut described);
    std::fs::write(meta, serde_json::to_vec(&described).unwrap()).unwrap();
}

/// Copies the snapshot in `from` over the one in `to`.
fn copy_snapshot(from: &Path, to: &Path) {
    for file in ["vectors.usearch", "vectors.json"] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
}

/// Saves a snapshot of the store at `path` into `vectors`.
fn saved(path: &Path, e: Arc<dyn TextEmbedder>, vectors: &Path) {
    drop(open_saved(path, e, vectors));
}

#[test]
fn a_snapshot_that_does_not_check_is_rebuilt() {
    let Some(e) = embedder() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (path, vectors) = (dir.path().join("s.db"), dir.path().join("vectors"));
    store(&path, e.clone());
    saved(&path, e.clone(), &vectors);
    let index = vectors.join("vectors.usearch");
    let meta = vectors.join("vectors.json");
    let check = |expect: &str| {
        let mem = open_saved(&path, e.clone(), &vectors);
        let note = snapshot_note(&mem);
        assert!(
            note.starts_with("rebuilt: ") && note.contains(expect),
            "{note}"
        );
        // Rebuilt, it answers as before (and saved a good snapshot again).
        assert_eq!(nearest(&mem, ALICE_TEETH, "acme/alice"), [FACTS[0].1]);
        drop(mem);
        assert!(snapshot_note(&open_saved(&path, e.clone(), &vectors)).starts_with("loaded: "));
    };
    // An altered index file.
    let mut bytes = std::fs::read(&index).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&index, &bytes).unwrap();
    check("does not match its description");
    // A truncated one.
    let bytes = std::fs::read(&index).unwrap();
    std::fs::write(&index, &bytes[..bytes.len() / 3]).unwrap();
    check("does not match its description");
    // A broken description.
    std::fs::write(&meta, b"{\"format\": 1, \"model\": ").unwrap();
    check("is not a snapshot description");
    // A snapshot of another log of the same size.
    let other = dir.path().join("other.db");
    let other_vectors = dir.path().join("other-vectors");
    let mem = setup_with(SqliteStore::open(&other).unwrap());
    for (scope, text) in FACTS.iter().rev() {
        mem.write(
            WriteRequest::new(&p("agent"), EntryKind::Observation, *text)
                .with_scope(Scope::new(scope).unwrap()),
        )
        .unwrap();
    }
    drop(mem);
    saved(&other, e.clone(), &other_vectors);
    copy_snapshot(&other_vectors, &vectors);
    check("another log");
    // A snapshot of a longer log than this one.
    let longer = Memory::open(SqliteStore::open(&other).unwrap()).unwrap();
    common::load_fixture_keys(&longer);
    for i in 0..30 {
        longer
            .write(WriteRequest::new(
                &p("agent"),
                EntryKind::Observation,
                format!("filler note {i}"),
            ))
            .unwrap();
    }
    drop(longer);
    // (Caught up by fewer entries than it takes to save again on open: saved explicitly.)
    open_saved(&other, e.clone(), &other_vectors)
        .save_vector_index(&other_vectors)
        .unwrap();
    copy_snapshot(&other_vectors, &vectors);
    check("which this log does not have");
    // Another model's.
    edit_description(&meta, |d| {
        d["model"] = serde_json::Value::from("some-other-model")
    });
    check("not ");
}

/// A description forged around an intact index (Alice's and Bob's scopes swapped) makes the
/// index propose Bob's entries for Alice's scope: verification drops them (their signed scope
/// is Bob's), so they are never rendered.
#[test]
fn a_forged_description_can_hide_never_move_an_entry_into_a_scope() {
    let Some(e) = embedder() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (path, vectors) = (dir.path().join("s.db"), dir.path().join("vectors"));
    store(&path, e.clone());
    saved(&path, e.clone(), &vectors);
    let meta = vectors.join("vectors.json");
    edit_description(&meta, |d| {
        let scopes: Vec<String> = d["scopes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| match s.as_str().unwrap() {
                "acme/alice" => "acme/bob".to_string(),
                "acme/bob" => "acme/alice".to_string(),
                other => other.to_string(),
            })
            .collect();
        d["scopes"] = serde_json::Value::from(scopes);
    });
    let mem = open_saved(&path, e, &vectors);
    assert!(snapshot_note(&mem).starts_with("loaded: "));
    let alice = Scope::new("acme/alice").unwrap();
    for query in ["Who is Bob's dentist?", "Which instrument is Bob learning?"] {
        let r = mem
            .search_with(query, &alice, 3, SearchMode::Semantic)
            .unwrap();
        for v in &r.entries {
            let text = v.text().unwrap();
            assert!(!text.starts_with("Bob"), "{query}: {text}");
        }
    }
}
