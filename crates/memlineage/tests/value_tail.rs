//! The SQLite value index's tail (schema version 2, `store/sqlite/values.rs`): appends write
//! their keys to a tail ordered by entry index and merge it into the key-ordered table every
//! so many entries; a lookup reads both, the tail through the store value's copy of it. Every
//! answer must equal the in-memory backend's, whatever the tail's size, however many merges
//! happened meanwhile, through a long-lived store value (whose copy spans merges), a fresh one,
//! and a snapshot begun before a merge; a version-1 store is upgraded on a writable open and
//! read as it is read-only.

mod common;

use common::{p, setup_with};
use memlineage::store::{Backend, BackendRead};
use memlineage::{Memory, MemoryStore, SqliteStore, WriteRequest};
use memlineage_core::entry::EntryKind;
use memlineage_core::gate::{ValueKey, value_keys_of_text};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

const IBANS: [&str; 4] = [
    "GB33 BUKB 2020 1555 5555 55",
    "DE89 3704 0044 0532 0130 00",
    "GB29 NWBK 6016 1331 9268 19",
    "FR14 2004 1010 0505 0001 3M02 606",
];

fn key_of(iban: &str) -> ValueKey {
    value_keys_of_text(iban)
        .first()
        .copied()
        .expect("an IBAN has a key")
}

/// A content carrying the IBANs chosen by `bits` (and an amount, so entries carry several keys).
fn content(bits: u64, n: u64) -> String {
    let mut text = format!("note {n}: amount {}.00", n % 7);
    for (i, iban) in IBANS.iter().enumerate() {
        if bits & (1 << i) != 0 {
            text.push_str(&format!(" pay {iban}"));
        }
    }
    text
}

fn request(writer: &str, text: String) -> WriteRequest {
    let kind = if writer == "email" {
        EntryKind::ToolOutput
    } else {
        EntryKind::Observation
    };
    WriteRequest::new(&p(writer), kind, text)
}

/// Every key's carriers from a few starting points and limits, as `reads` answers them.
fn answers(reads: &dyn BackendRead, size: u64) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    for iban in IBANS {
        let key = key_of(iban);
        for from in [0, 1, size / 3, size / 2, size.saturating_sub(2), size] {
            for limit in [1, 3, 1000] {
                out.push(reads.value_carriers(&key, from, limit).unwrap());
            }
        }
    }
    out
}

/// A snapshot held across steps, and the answers it gave when it was begun.
type Held<'a> = (Box<dyn BackendRead + 'a>, Vec<Vec<u64>>);

fn interleaving(seed: u64, tail: u64, steps: usize) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    let writer = setup_with(SqliteStore::open(&file).unwrap().value_tail(tail));
    let reference_store = MemoryStore::new();
    let reference_view = reference_store.read_only_view();
    let reference = setup_with(reference_store);
    // A store value that lives through every merge, and its snapshot begun at some step.
    let long_lived = SqliteStore::open(&file).unwrap().value_tail(tail);
    let mut held: Option<Held<'_>> = None;
    let mut n = 0u64;
    for step in 0..steps {
        let writers = ["agent", "email", "user"];
        let group = 1 + (rng.next_u64() % 5) as usize;
        let reqs: Vec<WriteRequest> = (0..group)
            .map(|_| {
                n += 1;
                let who = writers[(rng.next_u64() % 3) as usize];
                request(who, content(rng.next_u64() % 16, n))
            })
            .collect();
        if group == 1 {
            let req = reqs.into_iter().next().unwrap();
            assert_eq!(
                writer.write(req.clone()).unwrap().index,
                reference.write(req).unwrap().index
            );
        } else {
            let a = writer.write_batch(reqs.clone()).unwrap();
            let b = reference.write_batch(reqs).unwrap();
            assert_eq!(a.last().unwrap().index, b.last().unwrap().index);
        }
        let size = reference_view.size().unwrap();
        let expected = answers(&reference_view, size);
        assert_eq!(
            answers(&long_lived, size),
            expected,
            "seed {seed}, tail {tail}, step {step}: the long-lived store value"
        );
        if rng.next_u64() % 4 == 0 {
            let fresh = SqliteStore::open(&file).unwrap();
            assert_eq!(
                answers(&fresh, size),
                expected,
                "step {step}: a fresh store value"
            );
        }
        match held.take() {
            None if rng.next_u64() % 3 == 0 => {
                let snapshot = long_lived.snapshot().unwrap();
                let at = answers(&*snapshot, size);
                assert_eq!(at, expected, "step {step}: a new snapshot");
                held = Some((snapshot, at));
            }
            Some((snapshot, at)) if rng.next_u64() % 3 != 0 => {
                // Later appends (and merges) are invisible to it; its answers do not change.
                let seen = snapshot.size().unwrap();
                assert_eq!(
                    answers(&*snapshot, seen),
                    at,
                    "step {step}: a snapshot held across appends"
                );
                held = Some((snapshot, at));
            }
            _ => {}
        }
    }
}

#[test]
fn lookups_equal_the_in_memory_index_across_merges() {
    for (seed, tail) in [(1, 1), (2, 2), (3, 5), (4, 16), (5, 16_384)] {
        interleaving(seed, tail, 60);
    }
}

#[test]
fn audit_and_gate_read_the_tail_and_the_merged_table_alike() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    let mem = setup_with(SqliteStore::open(&file).unwrap().value_tail(3));
    for n in 0..10 {
        mem.write(request("email", content(1 + n % 15, n))).unwrap();
    }
    // Entries 0‥8 of the log (genesis and principals included) were merged; the last ones are
    // in the tail: the audit finds every key of every entry either way.
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
    // A key removed from the tail behind the program's back is reported, although the
    // handle's copy of the tail still held it.
    let last = mem.write(request("email", content(1, 99))).unwrap().index;
    rusqlite::Connection::open(&file)
        .unwrap()
        .execute("DELETE FROM value_keys_tail WHERE idx = ?1", [last as i64])
        .unwrap();
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.index == Some(last) && p.reason.contains("value index")),
        "{:?}",
        report.problems
    );
}

#[test]
fn a_version_1_store_is_read_as_it_is_and_upgraded_when_opened_for_writing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    let carriers = {
        let mem = setup_with(SqliteStore::open(&file).unwrap());
        for n in 0..6 {
            mem.write(request("email", content(1 + n % 15, n))).unwrap();
        }
        let store = SqliteStore::open(&file).unwrap();
        let size = store.size().unwrap();
        answers(&store, size)
    };
    // As version 1 left it: every key in `value_keys`, no tail tables.
    rusqlite::Connection::open(&file)
        .unwrap()
        .execute_batch(
            "INSERT OR IGNORE INTO value_keys (key, idx) SELECT key, idx FROM value_keys_tail; \
             DROP TABLE value_keys_tail; DROP TABLE value_keys_merged; PRAGMA user_version = 1;",
        )
        .unwrap();
    let read_only = SqliteStore::open_read_only(&file).unwrap();
    let size = read_only.size().unwrap();
    assert_eq!(answers(&read_only, size), carriers);
    drop(read_only);
    let mem = Memory::open(SqliteStore::open(&file).unwrap().value_tail(2)).unwrap();
    let version: u32 = rusqlite::Connection::open(&file)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 2);
    common::load_fixture_keys(&mem);
    let more = mem.write(request("email", content(15, 7))).unwrap().index;
    mem.write(request("email", content(15, 8))).unwrap();
    let store = SqliteStore::open(&file).unwrap();
    for iban in IBANS {
        let found = store.value_carriers(&key_of(iban), more, 10).unwrap();
        assert_eq!(found, vec![more, more + 1], "{iban}");
    }
    assert!(mem.verify(&mut |_, _| {}).unwrap().ok());
}

#[test]
fn a_newer_schema_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    drop(setup_with(SqliteStore::open(&file).unwrap()));
    rusqlite::Connection::open(&file)
        .unwrap()
        .execute_batch("PRAGMA user_version = 3;")
        .unwrap();
    for opened in [
        SqliteStore::open(&file).map(|_| ()),
        SqliteStore::open_read_only(&file).map(|_| ()),
    ] {
        let err = opened.unwrap_err();
        assert!(err.to_string().contains('3'), "{err}");
    }
}
