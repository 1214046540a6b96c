//! The in-memory filter of logged ids (`Memory::keep_logged_ids`, `docs/store.md`, "Id
//! index"): with it, an append still refuses every id already in the log — merged by this
//! handle, by another handle on the same file (another process), or logged before the filter
//! was built — and takes every new one.

use memlineage::store::SqliteStore;
use memlineage::{Memory, PrincipalName, Settings, SignedWrites, WriteRequest};
use memlineage_core::entry::EntryKind;
use memlineage_core::label::TrustClass;
use std::path::Path;

fn key(b: u8) -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[b; 32])
}

fn agent() -> PrincipalName {
    "agent".parse().unwrap()
}

/// A new store at `file` whose value tail merges every `tail` entries, with a trusted agent.
fn new_store(file: &Path, tail: u64) -> Memory {
    let operator: PrincipalName = "operator".parse().unwrap();
    let mem = Memory::init(
        SqliteStore::open(file).unwrap().value_tail(tail),
        Settings::with_origin("test.local/logged-ids"),
        &operator,
        key(1),
    )
    .unwrap();
    mem.add_principal(&agent(), TrustClass::Trusted, &key(2).verifying_key())
        .unwrap();
    mem.keys().insert(&agent(), key(2));
    mem
}

/// Another handle on the same file (what another process would hold).
fn other_handle(file: &Path, tail: u64) -> Memory {
    let mem = Memory::open(SqliteStore::open(file).unwrap().value_tail(tail)).unwrap();
    mem.keys().insert(&agent(), key(2));
    mem
}

fn batch(mem: &Memory, tag: &str, n: usize) -> SignedWrites {
    let reqs = (0..n)
        .map(|i| WriteRequest::new(&agent(), EntryKind::Observation, format!("{tag} note {i}")))
        .collect();
    mem.sign_writes(reqs).unwrap()
}

fn refused(mem: &Memory, writes: &SignedWrites, what: &str) {
    let e = mem.append_signed(writes).unwrap_err();
    assert!(e.to_string().contains("already in the log"), "{what}: {e}");
}

#[test]
fn every_logged_id_is_refused_through_the_filter_whoever_merged_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    let tail = 5;
    let writer = new_store(&file, tail);
    let mut earlier: Vec<SignedWrites> = Vec::new();
    // Logged before the filter is built: it starts from the id index.
    for step in 0..4 {
        let w = batch(&writer, &format!("before {step}"), 3);
        writer.append_signed(&w).unwrap();
        earlier.push(w);
    }
    let kept = writer
        .keep_logged_ids()
        .unwrap()
        .expect("a SQLite file store keeps one");
    assert!(
        kept.covered > 0 && kept.prefixes >= kept.covered,
        "{kept:?}"
    );
    let other = other_handle(&file, tail);
    // A fixed interleaving of both handles' appends (1 to 4 entries, merges every few
    // appends): each new batch is taken, and every earlier one is refused through the writer.
    for step in 0..40usize {
        let by_other = step % 3 == 1 || step % 7 == 0;
        let mem = if by_other { &other } else { &writer };
        let w = batch(mem, &format!("step {step}"), 1 + step % 4);
        mem.append_signed(&w).unwrap();
        earlier.push(w);
        if step == 20 {
            // The other handle merges the tail past everything the writer has read: the
            // writer's filter reads those ids from the log.
            for run in 0..12 {
                let w = batch(&other, &format!("run {run}"), 3);
                other.append_signed(&w).unwrap();
                earlier.push(w);
            }
        }
        for (i, old) in earlier.iter().enumerate() {
            refused(&writer, old, &format!("step {step}, batch {i} again"));
        }
        // Repeated through the other handle too, which keeps no filter.
        refused(
            &other,
            &earlier[step % earlier.len()],
            &format!("step {step}, other"),
        );
    }
    // A batch with one new and one logged entry is refused whole, and nothing is written.
    let size = writer.size().unwrap();
    let mut mixed = batch(&writer, "mixed", 1);
    mixed.extend(earlier.pop().unwrap());
    refused(&writer, &mixed, "a mixed batch");
    assert_eq!(writer.size().unwrap(), size);
    writer.append_signed(&batch(&writer, "last", 2)).unwrap();
    let report = writer.verify(&mut |_, _| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn only_a_writable_sqlite_store_keeps_the_filter() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    let writer = new_store(&file, 3);
    for step in 0..3 {
        writer
            .append_signed(&batch(&writer, &format!("{step}"), 4))
            .unwrap();
    }
    let kept = writer.keep_logged_ids().unwrap().unwrap();
    // Three merges of the tail of 3 (and the registry's entries): every merged id is held.
    assert!(kept.covered >= 9, "{kept:?}");
    assert!(kept.bytes >= kept.prefixes * 5, "{kept:?}");
    let read_only = Memory::open(SqliteStore::open_read_only(&file).unwrap()).unwrap();
    assert_eq!(read_only.keep_logged_ids().unwrap(), None);
    let in_memory = Memory::init(
        memlineage::store::MemoryStore::new(),
        Settings::with_origin("test.local/logged-ids"),
        &"operator".parse().unwrap(),
        key(1),
    )
    .unwrap();
    assert_eq!(in_memory.keep_logged_ids().unwrap(), None);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

    /// Any interleaving of two handles' appends, any tail size, the filter kept from any step
    /// on: every new batch is taken, and any earlier batch tried again — through the writer
    /// that keeps the filter or through the other handle — is refused.
    #[test]
    fn with_the_filter_an_append_refuses_exactly_the_logged_ids(
        tail in 1u64..8,
        keep_from in 0usize..24,
        steps in proptest::collection::vec(
            (proptest::bool::ANY, 1usize..5, 0usize..1000, proptest::bool::ANY),
            1..24,
        ),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("store.db");
        let writer = new_store(&file, tail);
        let other = other_handle(&file, tail);
        let mut earlier: Vec<SignedWrites> = Vec::new();
        for (step, &(by_other, n, again, through_other)) in steps.iter().enumerate() {
            if step == keep_from {
                proptest::prop_assert!(writer.keep_logged_ids().unwrap().is_some());
            }
            let mem = if by_other { &other } else { &writer };
            let w = batch(mem, &format!("step {step}"), n);
            mem.append_signed(&w).unwrap();
            earlier.push(w);
            let through = if through_other { &other } else { &writer };
            refused(through, &earlier[again % earlier.len()], &format!("step {step}"));
        }
    }
}
