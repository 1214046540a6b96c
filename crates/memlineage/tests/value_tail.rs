//! The SQLite store's tail (schema versions 2 and 3, `store/sqlite/values.rs`, `ids.rs`):
//! appends write their value keys to a tail ordered by entry index, and their ids only to
//! `entries`, and merge both into key-ordered tables every so many entries; a lookup reads
//! both, the tail through the store value's copy of it. Every value lookup must equal the
//! in-memory backend's, and every entry be found by its id as by its index, whatever the
//! tail's size, however many merges happened meanwhile, through a long-lived store value
//! (whose copy spans merges), a fresh one, and a snapshot begun before a merge; stores of
//! versions 1 to 3 are upgraded on a writable open (version 4 also moves the Merkle nodes to
//! their positions) and read as they are read-only.

mod common;

use common::{p, setup_with};
use memlineage::store::{Backend, BackendRead};
use memlineage::{Memory, MemoryStore, SqliteStore, WriteRequest};
use memlineage_core::entry::EntryKind;
use memlineage_core::gate::{ValueKey, value_keys_of_text};
use memlineage_core::merkle::{NodeId, completed_by_append};
use memlineage_core::{EntryId, Hash256};
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

/// Every entry is found by its id as by its index (one at a time, many at once with
/// duplicates and ids not in the log, and by its labels), ids not in the log are not, and
/// id ranges equal the sorted ids: the id index (`entry_ids` and the tail) as `reads` sees it.
/// `later`: ids of entries appended after `reads`'s snapshot, which it must not find.
fn check_ids(reads: &dyn BackendRead, size: u64, later: &[EntryId], what: &str) {
    let logged: Vec<EntryId> = (0..size)
        .map(|i| reads.entry_by_index(i).unwrap().expect("in the log").id)
        .collect();
    let mut ghosts: Vec<EntryId> = (0..3u8).map(|g| EntryId(Hash256::of(&[g]))).collect();
    ghosts.extend(later);
    for (i, id) in logged.iter().enumerate() {
        let i = i as u64;
        assert_eq!(
            reads.entry_by_id(id).unwrap().map(|e| e.index),
            Some(i),
            "{what}: {id}"
        );
        assert_eq!(
            reads.labels_by_id(id).unwrap().map(|l| l.index),
            Some(i),
            "{what}: {id}"
        );
    }
    for ghost in &ghosts {
        assert!(reads.entry_by_id(ghost).unwrap().is_none(), "{what}");
        assert!(reads.labels_by_id(ghost).unwrap().is_none(), "{what}");
    }
    let mut asked: Vec<EntryId> = logged.iter().rev().step_by(2).copied().collect();
    asked.extend(&ghosts);
    asked.extend(logged.first());
    asked.extend(logged.last());
    let expected: Vec<Option<u64>> = asked
        .iter()
        .map(|id| logged.iter().position(|l| l == id).map(|i| i as u64))
        .collect();
    let many: Vec<Option<u64>> = reads
        .entries_by_id(&asked)
        .unwrap()
        .into_iter()
        .map(|e| e.map(|e| e.index))
        .collect();
    assert_eq!(many, expected, "{what}: many at once");
    let mut sorted = logged.clone();
    sorted.sort_unstable();
    let starts = [
        EntryId(Hash256([0; 32])),
        sorted[sorted.len() / 2],
        ghosts[0],
    ];
    for from in starts {
        for limit in [1, 3, 1000] {
            let range: Vec<EntryId> = sorted
                .iter()
                .filter(|id| **id >= from)
                .take(limit)
                .copied()
                .collect();
            assert_eq!(
                reads.ids_from(&from, limit).unwrap(),
                range,
                "{what}: ids from"
            );
        }
    }
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
        check_ids(&long_lived, size, &[], "the long-lived store value");
        if rng.next_u64() % 4 == 0 {
            let fresh = SqliteStore::open(&file).unwrap();
            assert_eq!(
                answers(&fresh, size),
                expected,
                "step {step}: a fresh store value"
            );
            check_ids(&fresh, size, &[], "a fresh store value");
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
                let later: Vec<EntryId> = (seen..size)
                    .map(|i| long_lived.entry_by_index(i).unwrap().unwrap().id)
                    .collect();
                check_ids(&*snapshot, seen, &later, "a snapshot held across appends");
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
    // Merges moved a slice at a time over 4 to 20 appends (`merge_slices.rs`).
    for (seed, tail) in [(6, 64), (7, 100)] {
        interleaving(seed, tail, 120);
    }
}

/// `(upto, done)` of the merge in progress, if any.
fn merging(file: &std::path::Path) -> Option<(i64, i64)> {
    rusqlite::OptionalExtension::optional(rusqlite::Connection::open(file).unwrap().query_row(
        "SELECT upto, done FROM value_keys_merging",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    ))
    .unwrap()
}

#[test]
fn a_merge_in_slices_goes_on_in_the_next_handle_and_a_stale_one_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    let tail = 64;
    let mem = setup_with(SqliteStore::open(&file).unwrap().value_tail(tail));
    let mut n = 0;
    // Until a merge is half done: 16 slices per append of one entry.
    while merging(&file).is_none_or(|(_, done)| done < 128) {
        mem.write(request("email", content(1 + n % 15, n))).unwrap();
        n += 1;
        assert!(n < 1000, "no merge began");
    }
    let (upto, _) = merging(&file).unwrap();
    let conn = rusqlite::Connection::open(&file).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    let below = count("SELECT COALESCE((SELECT below FROM value_keys_merged), 0)");
    // Half the slices are in both tables: read once, as before.
    assert!(
        count(&format!(
            "SELECT COUNT(*) FROM entry_ids WHERE idx >= {below}"
        )) > 0
    );
    let size = mem.size().unwrap();
    let expected = answers(&SqliteStore::open(&file).unwrap(), size);
    check_ids(&SqliteStore::open(&file).unwrap(), size, &[], "mid-merge");
    drop(mem);
    // Another handle (as after a crash) goes on with the merge the store records.
    let mem = Memory::open(SqliteStore::open(&file).unwrap().value_tail(tail)).unwrap();
    common::load_fixture_keys(&mem);
    assert_eq!(answers(&SqliteStore::open(&file).unwrap(), size), expected);
    while merging(&file).is_some() {
        mem.write(request("email", content(1 + n % 15, n))).unwrap();
        n += 1;
    }
    assert_eq!(count("SELECT below FROM value_keys_merged"), upto);
    assert_eq!(
        (
            count(&format!(
                "SELECT COUNT(*) FROM entry_ids WHERE idx >= {upto}"
            )),
            count(&format!(
                "SELECT COUNT(*) FROM value_keys_tail WHERE idx < {upto}"
            )),
            count("SELECT COUNT(*) FROM entry_ids"),
        ),
        (0, 0, upto),
        "the merge moved exactly the entries below `upto`"
    );
    // A recorded merge that does not fit the merge point is dropped at the next append.
    conn.execute(
        "INSERT INTO value_keys_merging (id, upto, done) VALUES (0, 1, 3)",
        [],
    )
    .unwrap();
    mem.write(request("email", content(3, n))).unwrap();
    assert_ne!(merging(&file), Some((1, 3)));
    let size = mem.size().unwrap();
    check_ids(
        &SqliteStore::open(&file).unwrap(),
        size,
        &[],
        "after the merge",
    );
    assert!(mem.verify(&mut |_, _| {}).unwrap().ok());
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

/// Makes a store of the given older schema version, as that version left it: every id in
/// the unique index of `entries.id` and none in `entry_ids` (which it lacks); for version 1
/// every value key in `value_keys` and no tail tables, for version 2 the value tail as it is
/// (with `value_tail(2)` some keys are still in it). Returns the carriers it answers.
fn older_store(file: &std::path::Path, version: u32) -> Vec<Vec<u64>> {
    let carriers = {
        let mem = setup_with(SqliteStore::open(file).unwrap().value_tail(2));
        let in_tail = || -> i64 {
            rusqlite::Connection::open(file)
                .unwrap()
                .query_row("SELECT COUNT(*) FROM value_keys_tail", [], |r| r.get(0))
                .unwrap()
        };
        let mut n = 0;
        while n < 7 || in_tail() == 0 {
            mem.write(request("email", content(1 + n % 15, n))).unwrap();
            n += 1;
        }
        let store = SqliteStore::open(file).unwrap();
        let size = store.size().unwrap();
        answers(&store, size)
    };
    let conn = rusqlite::Connection::open(file).unwrap();
    // Versions 1 to 3 keep the Merkle nodes by level and index.
    conn.execute_batch(
        "CREATE TABLE nodes (level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL, \
         PRIMARY KEY (level, idx)) WITHOUT ROWID; \
         INSERT INTO nodes (level, idx, hash) SELECT level, idx, hash FROM merkle_nodes; \
         DROP TABLE merkle_nodes;",
    )
    .unwrap();
    if version < 3 {
        conn.execute_batch(
            "CREATE UNIQUE INDEX legacy_entry_id ON entries(id); DROP TABLE entry_ids;",
        )
        .unwrap();
    }
    if version == 1 {
        conn.execute_batch(
            "INSERT OR IGNORE INTO value_keys (key, idx) SELECT key, idx FROM value_keys_tail; \
             DROP TABLE value_keys_tail; DROP TABLE value_keys_merged;",
        )
        .unwrap();
    } else {
        let tail: i64 = conn
            .query_row("SELECT COUNT(*) FROM value_keys_tail", [], |r| r.get(0))
            .unwrap();
        assert!(tail > 0, "the version-{version} store has keys in its tail");
    }
    conn.pragma_update(None, "user_version", version).unwrap();
    carriers
}

#[test]
fn older_stores_are_read_as_they_are_and_upgraded_when_opened_for_writing() {
    for version in [1, 2, 3] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("store.db");
        let carriers = older_store(&file, version);
        let read_only = SqliteStore::open_read_only(&file).unwrap();
        let size = read_only.size().unwrap();
        assert_eq!(answers(&read_only, size), carriers, "version {version}");
        check_ids(&read_only, size, &[], "an older store read-only");
        // Every Merkle node, read by level and index from the older table.
        let all: Vec<NodeId> = (0..size)
            .flat_map(|leaf| std::iter::once(NodeId::leaf(leaf)).chain(completed_by_append(leaf)))
            .collect();
        let hashes = read_only.nodes(&all).unwrap();
        drop(read_only);
        let mem = Memory::open(SqliteStore::open(&file).unwrap().value_tail(2)).unwrap();
        let conn = rusqlite::Connection::open(&file).unwrap();
        let version_now: u32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version_now, 5);
        // Versions 1 and 2: the upgrade merged the whole tail, every id in `entry_ids` and no
        // key left in the tail; a version-3 store keeps its tail and merge point.
        let (ids, tail): (i64, i64) = conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM entry_ids), (SELECT COUNT(*) FROM value_keys_tail)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        if version < 3 {
            assert_eq!((ids as u64, tail), (size, 0), "version {version}");
        } else {
            assert!(
                tail > 0 && (ids as u64) < size,
                "version 3: {ids} ids, {tail} in the tail"
            );
        }
        // Every node moved to its position, and the table by level is gone.
        let (moved, old): (i64, i64) = conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM merkle_nodes), \
                 (SELECT COUNT(*) FROM sqlite_master WHERE name = 'nodes')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(
            (moved as u64, old),
            (2 * size - u64::from(size.count_ones()), 0)
        );
        common::load_fixture_keys(&mem);
        let more = mem.write(request("email", content(15, 7))).unwrap().index;
        mem.write(request("email", content(15, 8))).unwrap();
        let store = SqliteStore::open(&file).unwrap();
        for iban in IBANS {
            let found = store.value_carriers(&key_of(iban), more, 10).unwrap();
            assert_eq!(found, vec![more, more + 1], "{iban}");
        }
        check_ids(&store, more + 2, &[], "an upgraded store");
        assert_eq!(store.nodes(&all).unwrap(), hashes, "version {version}");
        assert!(mem.verify(&mut |_, _| {}).unwrap().ok());
    }
}

#[test]
fn a_newer_schema_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    drop(setup_with(SqliteStore::open(&file).unwrap()));
    rusqlite::Connection::open(&file)
        .unwrap()
        .execute_batch("PRAGMA user_version = 6;")
        .unwrap();
    for opened in [
        SqliteStore::open(&file).map(|_| ()),
        SqliteStore::open_read_only(&file).map(|_| ()),
    ] {
        let err = opened.unwrap_err();
        assert!(err.to_string().contains('6'), "{err}");
    }
}

#[test]
fn the_audit_and_reads_name_an_id_index_row_deleted_or_edited() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    let mem = setup_with(SqliteStore::open(&file).unwrap().value_tail(3));
    let mut written = Vec::new();
    for n in 0..10 {
        written.push(mem.write(request("agent", content(0, n))).unwrap());
    }
    assert!(mem.verify(&mut |_, _| {}).unwrap().ok());
    let (gone, moved, other) = (&written[0], &written[1], &written[2]);
    let conn = rusqlite::Connection::open(&file).unwrap();
    let merged = |id: &EntryId| -> i64 {
        conn.query_row(
            "SELECT COUNT(*) FROM entry_ids WHERE id = ?1",
            [id.as_bytes().as_slice()],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(
        (merged(&gone.id), merged(&moved.id)),
        (1, 1),
        "both were merged"
    );
    conn.execute(
        "DELETE FROM entry_ids WHERE id = ?1",
        [gone.id.as_bytes().as_slice()],
    )
    .unwrap();
    conn.execute(
        "UPDATE entry_ids SET idx = ?1 WHERE id = ?2",
        rusqlite::params![other.index as i64, moved.id.as_bytes().as_slice()],
    )
    .unwrap();
    let store = SqliteStore::open(&file).unwrap();
    assert!(store.entry_by_id(&gone.id).unwrap().is_none());
    let err = store.entry_by_id(&moved.id).unwrap_err();
    assert!(err.to_string().contains("id index"), "{err}");
    let report = mem.verify(&mut |_, _| {}).unwrap();
    for (entry, what) in [(gone, "does not find"), (moved, "fails")] {
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.index == Some(entry.index) && p.reason.contains(what)),
            "{what}: {:?}",
            report.problems
        );
    }
    // A write naming the hidden entry as a parent is refused, never labelled without it (by a
    // handle that has not seen the entry: this one remembers the labels it signed).
    let mem = Memory::open(SqliteStore::open(&file).unwrap()).unwrap();
    common::load_fixture_keys(&mem);
    let child = WriteRequest::new(&p("agent"), EntryKind::Observation, "from the hidden one")
        .with_parents(
            vec![memlineage_core::entry::Parent {
                id: gone.id,
                weight: memlineage_core::label::Weight::ONE,
            }],
            memlineage::AttributionName::EXPLICIT,
        );
    let err = mem.write(child).unwrap_err();
    assert!(matches!(err, memlineage::Error::UnknownParent(_)), "{err}");
}
