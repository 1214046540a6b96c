//! What a handle remembers of its verifications (`memory/verified_cache.rs`), tested against a
//! store edited behind its back: a remembered answer is about the exact bytes that were
//! verified, so an edited leaf, content or signature is checked again and dropped; labels still
//! follow the log's distrust records; an inclusion proved in a signed tree carries over to a
//! later checkpoint only through a verified consistency proof; and a handle that remembers
//! nothing (`with_verified_cache(0)`) checks every row from the store, as before.

mod common;

use common::tamper::{rebuild_nodes, set_node};
use common::{derived, p, setup_with};
use memlineage::{Memory, SqliteStore, WriteRequest};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::label::TrustLabel;
use memlineage_core::merkle::NodeId;
use memlineage_core::records::DistrustTarget;
use std::path::Path;

fn note(mem: &Memory, writer: &str, text: &str) -> EntryId {
    mem.write(WriteRequest::new(&p(writer), EntryKind::Observation, text))
        .unwrap()
        .id
}

/// A file store with `n` agent notes matching `shared`, checkpointed, searched once (so the
/// handle remembers their signatures, inclusions and labels).
fn warm_store(path: &Path, n: usize) -> (Memory, Vec<EntryId>) {
    let mem = setup_with(SqliteStore::open(path).unwrap());
    let ids: Vec<EntryId> = (0..n)
        .map(|i| note(&mem, "agent", &format!("shared note number {i}")))
        .collect();
    mem.checkpoint().unwrap();
    assert_eq!(search(&mem).entries.len(), n);
    assert_eq!(mem.recall(&ids).unwrap().entries.len(), n);
    (mem, ids)
}

fn search(mem: &Memory) -> memlineage::memory::Retrieval {
    mem.search("shared", &Scope::default(), 8).unwrap()
}

fn returned(r: &memlineage::memory::Retrieval) -> Vec<EntryId> {
    r.entries.iter().map(|v| v.entry.id()).collect()
}

fn dropped(r: &memlineage::memory::Retrieval) -> Vec<(EntryId, String)> {
    r.dropped.iter().map(|d| (d.id, d.reason.clone())).collect()
}

/// A byte inside the leaf's signature (the body, and so the id, stay as they are; as in
/// `read_path.rs`).
const SIGNATURE_BYTE: usize = 20;

fn index_of(mem: &Memory, id: &EntryId) -> i64 {
    mem.get(id).unwrap().index as i64
}

/// Flips one bit of the stored leaf at `index`, at the byte `at(leaf length)`.
fn edit_leaf(path: &Path, index: i64, at: impl Fn(usize) -> usize) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut leaf: Vec<u8> = conn
        .query_row("SELECT leaf FROM entries WHERE idx = ?1", [index], |r| {
            r.get(0)
        })
        .unwrap();
    let at = at(leaf.len());
    leaf[at] ^= 1;
    conn.execute(
        "UPDATE entries SET leaf = ?1 WHERE idx = ?2",
        rusqlite::params![leaf, index],
    )
    .unwrap();
}

#[test]
fn an_edited_signature_or_content_of_a_remembered_entry_is_checked_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (mem, ids) = warm_store(&path, 4);
    // Entry 1: one byte of its signature (the body and the id unchanged).
    edit_leaf(&path, index_of(&mem, &ids[1]), |_| SIGNATURE_BYTE);
    // Entry 2: its content.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE content SET bytes = ?1 WHERE idx = ?2",
        rusqlite::params![b"shared and tampered".to_vec(), index_of(&mem, &ids[2])],
    )
    .unwrap();
    for r in [search(&mem), mem.recall(&ids).unwrap()] {
        let kept = returned(&r);
        assert!(kept.contains(&ids[0]) && kept.contains(&ids[3]), "{kept:?}");
        assert!(
            !kept.contains(&ids[1]) && !kept.contains(&ids[2]),
            "{kept:?}"
        );
        let reasons = dropped(&r);
        assert!(
            reasons
                .iter()
                .any(|(id, why)| *id == ids[2] && why == "content does not match its signed hash"),
            "{reasons:?}"
        );
        assert!(reasons.iter().any(|(id, _)| *id == ids[1]), "{reasons:?}");
    }
}

#[test]
fn a_distrust_after_the_entries_were_verified_still_lowers_their_labels() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mem = setup_with(SqliteStore::open(&path).unwrap());
    let root = note(&mem, "user", "shared payee is ACME");
    let child = mem
        .write(derived("agent", "shared summary: pay ACME", &[(root, "1")]))
        .unwrap()
        .id;
    mem.checkpoint().unwrap();
    let before = mem.recall(&[root, child]).unwrap();
    assert!(
        before
            .entries
            .iter()
            .all(|v| v.effective_label <= TrustLabel::DerivedTrusted)
    );
    mem.distrust(&p("operator"), DistrustTarget::Entry(root), "phished")
        .unwrap();
    mem.checkpoint().unwrap();
    let after = mem.recall(&[root, child]).unwrap();
    assert_eq!(after.entries.len(), 2, "{:?}", after.dropped);
    for v in &after.entries {
        assert!(
            v.effective_label >= TrustLabel::DerivedUntrusted,
            "{} kept {}",
            v.entry.id(),
            v.effective_label
        );
    }
}

#[test]
fn a_proved_inclusion_carries_over_to_a_consistent_later_checkpoint_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (mem, ids) = warm_store(&path, 6);
    // The log grows and a new checkpoint is signed: the proofs of the first six were verified
    // against the old one, which the new one extends (checked by a consistency proof).
    for i in 0..5 {
        note(&mem, "agent", &format!("later note {i}"));
    }
    mem.checkpoint().unwrap();
    assert_eq!(mem.recall(&ids).unwrap().entries.len(), 6);
    // A path node of entry 1 (its sibling leaf's hash) edited now: the entry is in the signed
    // log (proved, and the new tree extends the proved one), so the handle keeps it; a handle
    // that remembers nothing reads the edited node and drops it.
    let victim = ids[1];
    let sibling = NodeId::leaf(index_of(&mem, &victim) as u64 ^ 1);
    set_node(&path, sibling, &[7u8; 32]);
    assert_eq!(mem.recall(&ids).unwrap().entries.len(), 6);
    let cold = Memory::open(SqliteStore::open(&path).unwrap())
        .unwrap()
        .with_verified_cache(0);
    let r = cold.recall(&ids).unwrap();
    assert_eq!(r.entries.len(), 5, "{:?}", r.dropped);
    let reasons = dropped(&r);
    assert_eq!(reasons.len(), 1);
    assert_eq!(reasons[0].0, victim);
    assert!(reasons[0].1.starts_with("inclusion proof"), "{reasons:?}");
    // The stored tree's root is still compared with the signed one at every retrieval.
    let size = mem.size().unwrap();
    let first_root = memlineage_core::merkle::root_nodes(size)[0];
    set_node(&path, first_root, &[9u8; 32]);
    let err = mem.recall(&ids).unwrap_err().to_string();
    assert!(err.contains("the stored tree of size"), "{err}");
}

#[test]
fn a_checkpoint_that_does_not_extend_the_proved_tree_forgets_the_inclusions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (mem, ids) = warm_store(&path, 4);
    // Rewrite history behind the handle: entry 1's leaf and every node above it change, and a
    // checkpoint of the same size is signed over the forged tree (the operator's key signs
    // whatever root the store holds). The remembered proofs were of the other root: they are
    // forgotten, the entry's signature no longer verifies, and it is dropped.
    edit_leaf(&path, index_of(&mem, &ids[1]), |_| SIGNATURE_BYTE);
    rebuild_nodes(&path);
    mem.checkpoint().unwrap();
    let r = mem.recall(&ids).unwrap();
    assert_eq!(
        dropped(&r),
        vec![(ids[1], "signature does not verify".to_string())]
    );
    assert_eq!(r.entries.len(), 3);
}

#[test]
fn an_edited_parent_after_its_children_were_verified() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mem = setup_with(SqliteStore::open(&path).unwrap());
    let parent = note(&mem, "agent", "parent note");
    let child = mem
        .write(derived("agent", "shared child", &[(parent, "1")]))
        .unwrap()
        .id;
    mem.checkpoint().unwrap();
    assert_eq!(mem.recall(&[child]).unwrap().entries.len(), 1);
    edit_leaf(&path, index_of(&mem, &parent), |len| len - 3);
    // The parent itself is read from the store and refused ...
    assert!(mem.get(&parent).is_err());
    // ... its child was checked against the label its parent signed, which this handle read
    // from the parent's leaf when that leaf hashed to the parent's id: it stays verified.
    assert_eq!(mem.recall(&[child]).unwrap().entries.len(), 1);
    // A handle that remembers nothing reads the edited leaf and drops the child.
    let cold = Memory::open(SqliteStore::open(&path).unwrap())
        .unwrap()
        .with_verified_cache(0);
    let r = cold.recall(&[child]).unwrap();
    assert!(r.entries.is_empty());
    assert!(dropped(&r)[0].1.starts_with("label: "), "{:?}", r.dropped);
    // `forget_verified` makes the warm handle do the same.
    mem.forget_verified();
    assert!(mem.recall(&[child]).unwrap().entries.is_empty());
}
