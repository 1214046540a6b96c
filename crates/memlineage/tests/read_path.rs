//! The read path's shortcuts check as much as the long way round: a cached checkpoint note is
//! verified again once its text changes; proofs read in one batch still drop exactly the
//! entry whose path was edited or lost, and still refuse a stored tree whose root is not the
//! signed one; proofs built from one node read equal the reference tree's; parents read in one
//! store call still fail exactly the entries that name an edited or missing parent, with the
//! reasons a single read gives; a bad signature drops exactly its entry, whether or not another
//! candidate with a bad signature was dropped for another reason first (the batch check on the
//! helper thread covers all candidates, the retrieval's answer only the ones it returns).

mod common;

use common::p;

use common::tamper::{rebuild_nodes, set_node};
use common::{derived, setup_with};
use memlineage::{Memory, SqliteStore, WriteRequest};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::merkle::{self, MemoryTree, NodeId};
use std::path::Path;

/// A file store with `n` observations that all match the query `shared`, checkpointed.
fn store_with(path: &Path, n: usize) -> (Memory, Vec<EntryId>) {
    let mem = setup_with(SqliteStore::open(path).unwrap());
    let ids = (0..n)
        .map(|i| {
            mem.write(WriteRequest::new(
                &p("agent"),
                EntryKind::Observation,
                format!("shared note number {i}"),
            ))
            .unwrap()
            .id
        })
        .collect();
    mem.checkpoint().unwrap();
    (mem, ids)
}

fn index_of(mem: &Memory, id: &EntryId) -> u64 {
    mem.get(id).unwrap().index
}

fn search(mem: &Memory) -> memlineage::memory::Retrieval {
    mem.search("shared", &Scope::default(), 8).unwrap()
}

#[test]
fn a_changed_checkpoint_note_is_verified_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (mem, _) = store_with(&path, 5);
    assert_eq!(search(&mem).entries.len(), 5);
    // Edit the signature line of the cached note: the next retrieval verifies it again.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let note: String = conn
        .query_row(
            "SELECT note FROM checkpoints ORDER BY size DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let sig_at = note.rfind(' ').unwrap() + 1;
    let flipped = if note.as_bytes()[sig_at + 10] == b'A' {
        "B"
    } else {
        "A"
    };
    let edited = format!("{}{flipped}{}", &note[..sig_at + 10], &note[sig_at + 11..]);
    conn.execute("UPDATE checkpoints SET note = ?1", [&edited])
        .unwrap();
    let err = mem
        .search("shared", &Scope::default(), 8)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not signed by the operator"), "{err}");
    assert!(mem.latest_checkpoint().is_err());
    // The original note verifies again; a new checkpoint replaces the cached one.
    conn.execute("UPDATE checkpoints SET note = ?1", [&note])
        .unwrap();
    assert_eq!(search(&mem).entries.len(), 5);
    mem.write(WriteRequest::new(
        &p("agent"),
        EntryKind::Observation,
        "shared and newer",
    ))
    .unwrap();
    let r = search(&mem);
    assert_eq!(r.entries.len(), 6);
    assert_eq!(r.checkpoint.unwrap().size, mem.size().unwrap());
}

#[test]
fn an_edited_or_missing_path_node_drops_only_that_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (mem, ids) = store_with(&path, 6);
    let victim = ids[1];
    let sibling = NodeId::leaf(index_of(&mem, &victim) ^ 1);
    set_node(&path, sibling, &[7u8; 32]);
    let r = search(&mem);
    assert_eq!(r.entries.len(), 5);
    assert!(r.entries.iter().all(|v| v.entry.id() != victim));
    assert_eq!(r.dropped.len(), 1);
    assert_eq!(r.dropped[0].id, victim);
    assert!(
        r.dropped[0].reason.starts_with("inclusion proof: "),
        "{:?}",
        r.dropped
    );
    // A deleted node fails the batch read; the fallback names it, for that entry only.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "DELETE FROM merkle_nodes WHERE level = 0 AND idx = ?1",
        [sibling.index as i64],
    )
    .unwrap();
    let r = search(&mem);
    assert_eq!(r.entries.len(), 5);
    assert_eq!(r.dropped.len(), 1);
    assert_eq!(r.dropped[0].id, victim);
    assert_eq!(
        r.dropped[0].reason,
        format!(
            "inclusion proof: store integrity: Merkle node (level 0, index {}) is missing",
            sibling.index
        )
    );
}

#[test]
fn an_edited_root_node_fails_the_retrieval() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (mem, _) = store_with(&path, 6);
    let size = mem.size().unwrap();
    let first_root = merkle::root_nodes(size)[0];
    set_node(&path, first_root, &[9u8; 32]);
    let err = mem
        .search("shared", &Scope::default(), 8)
        .unwrap_err()
        .to_string();
    assert!(err.contains("the stored tree of size"), "{err}");
    // A root node that is gone fails it too (through the fallback, as before batching).
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "DELETE FROM merkle_nodes WHERE level = ?1 AND idx = ?2",
        rusqlite::params![first_root.level, first_root.index as i64],
    )
    .unwrap();
    let err = mem
        .search("shared", &Scope::default(), 8)
        .unwrap_err()
        .to_string();
    assert!(err.contains("is missing"), "{err}");
}

#[test]
fn proofs_from_one_node_read_match_the_reference_tree() {
    let mem = setup_with(SqliteStore::in_memory().unwrap());
    for i in 0..37 {
        mem.write(WriteRequest::new(
            &p("agent"),
            EntryKind::Observation,
            format!("entry {i}"),
        ))
        .unwrap();
    }
    let size = mem.size().unwrap();
    let mut tree = MemoryTree::new();
    for v in mem.log(0, size).unwrap() {
        tree.append(&v.entry.to_leaf());
    }
    for v in mem.log(0, size).unwrap() {
        for at in [v.index + 1, size] {
            let p = mem.prove_inclusion(&v.entry.id(), Some(at)).unwrap();
            let want = tree.inclusion_proof(v.index, at).unwrap();
            assert_eq!(p.path.iter().map(|h| h.0).collect::<Vec<_>>(), want);
            assert_eq!(p.root.0, tree.root_at(at).unwrap());
        }
    }
    for old in 0..=size {
        for new in [old, (old + 5).min(size), size] {
            let (a, b, proof) = mem.prove_consistency(old, new).unwrap();
            assert_eq!(a, tree.root_at(old).unwrap());
            assert_eq!(b, tree.root_at(new).unwrap());
            assert_eq!(proof, tree.consistency_proof(old, new).unwrap());
        }
    }
}

/// The kept ids and the dropped (id, reason) pairs, sorted (search ranks, recall keeps order).
type Outcome = (Vec<EntryId>, Vec<(EntryId, String)>);

fn outcome(r: &memlineage::memory::Retrieval) -> Outcome {
    let mut kept: Vec<EntryId> = r.entries.iter().map(|v| v.entry.id()).collect();
    let mut dropped: Vec<(EntryId, String)> =
        r.dropped.iter().map(|d| (d.id, d.reason.clone())).collect();
    kept.sort();
    dropped.sort();
    (kept, dropped)
}

fn outcome_of(kept: &[EntryId], dropped: &[EntryId], reason: &str) -> Outcome {
    let mut kept = kept.to_vec();
    let mut dropped: Vec<(EntryId, String)> =
        dropped.iter().map(|id| (*id, reason.to_string())).collect();
    kept.sort();
    dropped.sort();
    (kept, dropped)
}

/// A parent whose leaf was edited, or whose row is gone, fails every returned entry that names
/// it and nothing else, by search and by recall, with the reason its own read gives.
#[test]
fn an_edited_or_missing_parent_fails_only_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    // A handle that remembers nothing it verified: every parent's leaf is read from the store
    // at every retrieval (what a handle remembers is `verified_cache.rs`'s test).
    let mem = setup_with(SqliteStore::open(&path).unwrap()).with_verified_cache(0);
    let note = |text: &str| {
        mem.write(WriteRequest::new(&p("agent"), EntryKind::Observation, text))
            .unwrap()
            .id
    };
    let (p, q) = (note("parent p"), note("parent q"));
    let child = |text: &str, parents: &[(EntryId, &str)]| {
        mem.write(derived("agent", text, parents)).unwrap().id
    };
    let both = child("shared child of both", &[(p, "0.6"), (q, "0.4")]);
    let of_p = child("shared child of p", &[(p, "1")]);
    let of_q = child("shared child of q", &[(q, "1")]);
    let alone = note("shared and alone");
    mem.checkpoint().unwrap();
    let ids = [both, of_p, of_q, alone];
    assert_eq!(search(&mem).entries.len(), 4);
    assert_eq!(mem.recall(&ids).unwrap().entries.len(), 4);
    let conn = rusqlite::Connection::open(&path).unwrap();
    // Edit p's leaf (its body no longer hashes to its id).
    let p_index = index_of(&mem, &p) as i64;
    let leaf: Vec<u8> = conn
        .query_row("SELECT leaf FROM entries WHERE idx = ?1", [p_index], |r| {
            r.get(0)
        })
        .unwrap();
    let mut edited = leaf.clone();
    let at = edited.len() - 3;
    edited[at] ^= 1;
    conn.execute(
        "UPDATE entries SET leaf = ?1 WHERE idx = ?2",
        rusqlite::params![edited, p_index],
    )
    .unwrap();
    let p_reason = mem
        .get(&p)
        .map(|_| String::new())
        .unwrap_or_else(|e| format!("label: {e}"));
    assert!(p_reason.starts_with("label: "), "{p_reason}");
    for r in [search(&mem), mem.recall(&ids).unwrap()] {
        assert_eq!(
            outcome(&r),
            outcome_of(&[of_q, alone], &[both, of_p], &p_reason)
        );
    }
    // Restore p, and delete q's row: its children name a parent the log does not have.
    conn.execute(
        "UPDATE entries SET leaf = ?1 WHERE idx = ?2",
        rusqlite::params![leaf, p_index],
    )
    .unwrap();
    conn.execute(
        "DELETE FROM entries WHERE id = ?1",
        [q.as_bytes().as_slice()],
    )
    .unwrap();
    let q_reason = format!("label: {}", memlineage::Error::UnknownParent(q));
    for r in [search(&mem), mem.recall(&ids).unwrap()] {
        assert_eq!(
            outcome(&r),
            outcome_of(&[of_p, alone], &[both, of_q], &q_reason)
        );
    }
}

#[test]
fn a_bad_signature_drops_exactly_its_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (mem, ids) = store_with(&path, 5);
    let conn = rusqlite::Connection::open(&path).unwrap();
    // Entries 1 and 3: one byte of the signature changed (the body, and so the id, unchanged);
    // entry 3's content edited too, so it is dropped before its signature is looked at.
    for victim in [ids[1], ids[3]] {
        let index = index_of(&mem, &victim) as i64;
        let mut leaf: Vec<u8> = conn
            .query_row("SELECT leaf FROM entries WHERE idx = ?1", [index], |r| {
                r.get(0)
            })
            .unwrap();
        leaf[20] ^= 0x40;
        conn.execute(
            "UPDATE entries SET leaf = ?1 WHERE idx = ?2",
            rusqlite::params![leaf, index],
        )
        .unwrap();
    }
    conn.execute(
        "UPDATE content SET bytes = ?1 WHERE idx = ?2",
        rusqlite::params![
            b"shared but tampered".to_vec(),
            index_of(&mem, &ids[3]) as i64
        ],
    )
    .unwrap();
    rebuild_nodes(&path);
    mem.checkpoint().unwrap();
    let mut expected = outcome_of(
        &[ids[0], ids[2], ids[4]],
        &[ids[1]],
        "signature does not verify",
    );
    expected
        .1
        .push((ids[3], "content does not match its signed hash".to_string()));
    expected.1.sort();
    for _ in 0..20 {
        assert_eq!(outcome(&search(&mem)), expected);
        assert_eq!(outcome(&mem.recall(&ids).unwrap()), expected);
    }
    // Without entry 1 only entry 3's signature is bad, and it is dropped for its content: the
    // others are returned though a candidate's signature failed.
    let others = [ids[0], ids[2], ids[3], ids[4]];
    let expected = outcome_of(
        &[ids[0], ids[2], ids[4]],
        &[ids[3]],
        "content does not match its signed hash",
    );
    for _ in 0..20 {
        assert_eq!(outcome(&mem.recall(&others).unwrap()), expected);
    }
}
