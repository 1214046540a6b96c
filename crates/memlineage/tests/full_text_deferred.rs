//! Full-text indexing after the commit (`Memory::defer_full_text`, `store/sqlite/full_text.rs`):
//! a store whose appends leave their texts pending answers every search as a store that indexes
//! in the append — entries forgotten while pending included — through a restart, a plain
//! handle's appends into the backlog, a read-only open and an upgrade from schema version 4;
//! the indexer thread keeps up and leaves nothing pending when stopped; a damaged mark is named,
//! and moving it back to 0 rebuilds the index.

mod common;

use common::notes::{SCOPES, write_notes};
use common::{load_fixture_keys, p, setup_with};
use memlineage::memory::{FullTextIndexer, Retrieval};
use memlineage::store::FullTextProgress;
use memlineage::{Backend, Memory, SqliteStore, WriteRequest};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Scope};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const QUERIES: [&str; 6] = [
    "rent invoice",
    "vault code",
    "the",
    "paris flight meeting",
    "IBAN refund garden",
    "nothing here",
];

fn ids(r: &Retrieval) -> Vec<EntryId> {
    r.entries.iter().map(|v| v.entry.id()).collect()
}

fn scopes() -> Vec<Scope> {
    std::iter::once(Scope::default())
        .chain(SCOPES.iter().map(|s| Scope::new(s).unwrap()))
        .collect()
}

/// Every query in every scope at several limits: the same entries in the same order.
fn assert_same_answers(deferred: &Memory, inline: &Memory, when: &str) {
    for q in QUERIES {
        for scope in &scopes() {
            for limit in [1, 3, 8, 40] {
                let a = deferred.search(q, scope, limit).unwrap();
                let b = inline.search(q, scope, limit).unwrap();
                assert_eq!(
                    ids(&a),
                    ids(&b),
                    "{when}: {q:?} in {scope:?}, limit {limit}"
                );
                assert!(a.dropped.is_empty(), "{when}: {:?}", a.dropped);
            }
        }
    }
}

/// Every match of every query (the ranking aside: FTS5's statistics after a delete are not
/// those of the live entries, docs/retrieval.md, so a store that indexed and then removed an
/// entry may order ties differently from one that never indexed it).
fn all_matches(mem: &Memory) -> BTreeSet<(String, EntryId)> {
    QUERIES
        .iter()
        .flat_map(|q| {
            ids(&mem.search(q, &Scope::default(), 10_000).unwrap())
                .into_iter()
                .map(|id| (q.to_string(), id))
        })
        .collect()
}

fn pending(mem: &Memory) -> u64 {
    mem.index_full_text(0).unwrap().pending
}

fn open(path: &Path) -> Memory {
    let mem = Memory::open(SqliteStore::open(path).unwrap()).unwrap();
    load_fixture_keys(&mem);
    mem
}

#[test]
fn a_deferring_store_answers_every_search_as_one_that_indexes_in_the_append() {
    let dir = tempfile::tempdir().unwrap();
    let inline = setup_with(SqliteStore::open(&dir.path().join("inline.db")).unwrap());
    let deferred = setup_with(SqliteStore::open(&dir.path().join("deferred.db")).unwrap());
    assert_eq!(
        inline.index_full_text(10).unwrap(),
        FullTextProgress::default()
    );
    assert!(deferred.defer_full_text().unwrap());
    let mut written = write_notes(&inline, 0, 300);
    assert_eq!(write_notes(&deferred, 0, 300), written);
    assert_eq!(pending(&inline), 0);
    assert_eq!(pending(&deferred), 300);

    // Indexed a chunk at a time, oldest first, each chunk one commit.
    let commits = deferred.commits().unwrap();
    let mut steps = Vec::new();
    loop {
        let step = deferred.index_full_text(64).unwrap();
        if step == FullTextProgress::default() {
            break;
        }
        steps.push(step);
    }
    let expected: Vec<(u64, u64)> = [(64, 236), (64, 172), (64, 108), (64, 44), (44, 0)].into();
    let got: Vec<(u64, u64)> = steps.iter().map(|s| (s.indexed, s.pending)).collect();
    assert_eq!(got, expected);
    assert_eq!(deferred.commits().unwrap(), commits + 5);
    assert_same_answers(&deferred, &inline, "indexed in chunks");

    // Left pending, then found by a search, which indexes what is pending first.
    written.extend(write_notes(&inline, 300, 50));
    write_notes(&deferred, 300, 50);
    assert_eq!(pending(&deferred), 50);
    assert_same_answers(&deferred, &inline, "pending until the search");
    assert_eq!(pending(&deferred), 0);

    // Forgotten while indexed and while pending, with and without erasing the content.
    written.extend(write_notes(&inline, 350, 40));
    write_notes(&deferred, 350, 40);
    assert_eq!(pending(&deferred), 40);
    let forgotten: Vec<EntryId> = written.iter().step_by(23).copied().collect();
    assert!(forgotten.iter().any(|id| written[350..].contains(id)));
    for (n, id) in forgotten.iter().enumerate() {
        for mem in [&inline, &deferred] {
            mem.forget(&p("operator"), id, n % 2 == 0, "test").unwrap();
        }
    }
    let (a, b) = (all_matches(&deferred), all_matches(&inline));
    assert_eq!(a, b);
    assert!(!a.is_empty());
    assert!(a.iter().all(|(_, id)| !forgotten.contains(id)));
    assert_eq!(pending(&deferred), 0);
    let rows = |mem: &Memory| {
        let path = mem.location().trim_start_matches("sqlite:").to_string();
        rusqlite::Connection::open(path)
            .unwrap()
            .query_row("SELECT COUNT(*) FROM search", [], |r| r.get::<_, i64>(0))
            .unwrap()
    };
    // Every live note is a document of both indexes, nothing else.
    assert_eq!(rows(&deferred), 390 - forgotten.len() as i64);
    assert_eq!(rows(&inline), rows(&deferred));
}

#[test]
fn pending_text_survives_a_restart_and_a_plain_handles_appends_join_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let deferred = setup_with(SqliteStore::open(&path).unwrap());
    assert!(deferred.defer_full_text().unwrap());
    write_notes(&deferred, 0, 100);
    // The handle goes away with its text pending, as at a crash: the mark is committed with
    // the entries.
    drop(deferred);

    // Read-only: nothing is indexed, and the backlog is reported.
    let read_only = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(
        read_only.index_full_text(1000).unwrap(),
        FullTextProgress {
            indexed: 0,
            pending: 100
        }
    );
    drop(read_only);

    // A plain handle (one that does not defer) appends behind the backlog: its entry joins it.
    let plain = open(&path);
    assert_eq!(pending(&plain), 100);
    let late = plain
        .write(WriteRequest::new(
            &p("agent"),
            EntryKind::Observation,
            "the garden gate code is 4711",
        ))
        .unwrap()
        .id;
    assert_eq!(pending(&plain), 101);
    let found = ids(&plain.search("garden gate", &Scope::default(), 200).unwrap());
    assert_eq!(found[0], late);
    assert!(found.len() > 1, "the backlog's gardens too");
    assert_eq!(pending(&plain), 0);
    // From here its appends index in the append again.
    write_notes(&plain, 100, 3);
    assert_eq!(pending(&plain), 0);
}

#[test]
fn the_indexer_keeps_up_and_leaves_nothing_pending_when_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mem = Arc::new(setup_with(SqliteStore::open(&path).unwrap()));
    let seen = Arc::new(AtomicU64::new(0));
    let indexer = {
        let seen = Arc::clone(&seen);
        FullTextIndexer::start(Arc::clone(&mem), move |step| {
            seen.fetch_add(step.indexed, Ordering::SeqCst);
        })
        .unwrap()
        .expect("a SQLite store defers")
    };
    write_notes(&mem, 0, 300);
    let deadline = Instant::now() + Duration::from_secs(30);
    while pending(&mem) > 0 {
        assert!(Instant::now() < deadline, "the indexer did not keep up");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(seen.load(Ordering::SeqCst), 300);
    // Written just before the stop: indexed by it.
    write_notes(&mem, 300, 200);
    indexer.stop().unwrap();
    assert_eq!(pending(&mem), 0);
    let inline = setup_with(SqliteStore::in_memory().unwrap());
    write_notes(&inline, 0, 500);
    assert_same_answers(&mem, &inline, "after the indexer");
    // A store that indexes in the append needs no indexer.
    let memory_store = Arc::new(setup_with(memlineage::MemoryStore::new()));
    assert!(
        FullTextIndexer::start(memory_store, |_| {})
            .unwrap()
            .is_none()
    );
}

#[test]
fn a_version_4_store_is_upgraded_with_nothing_pending() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mem = setup_with(SqliteStore::open(&path).unwrap());
    write_notes(&mem, 0, 60);
    drop(mem);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 4;")
        .unwrap();
    let read_only = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(read_only.index_full_text(10).unwrap().pending, 0);
    drop(read_only);
    let upgraded = open(&path);
    let version: u32 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 5);
    assert_eq!(pending(&upgraded), 0);
    let inline = setup_with(SqliteStore::in_memory().unwrap());
    write_notes(&inline, 0, 60);
    assert_same_answers(&upgraded, &inline, "upgraded");
}

#[test]
fn a_damaged_mark_is_named_and_nothing_is_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mem = setup_with(SqliteStore::open(&path).unwrap());
    assert!(mem.defer_full_text().unwrap());
    write_notes(&mem, 0, 10);
    let set_mark = |value: &str| {
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute(
                "UPDATE settings SET value = ?1 WHERE key = 'full_text_pending_from'",
                [value],
            )
            .unwrap();
    };
    let write = || {
        mem.write(WriteRequest::new(
            &p("agent"),
            EntryKind::Observation,
            "rent",
        ))
    };
    let size = mem.size().unwrap();
    set_mark("ten");
    let err = mem.index_full_text(100).unwrap_err().to_string();
    assert!(
        err.contains("full_text_pending_from") && err.contains("ten"),
        "{err}"
    );
    let err = mem
        .search("rent", &Scope::default(), 5)
        .unwrap_err()
        .to_string();
    assert!(err.contains("full_text_pending_from"), "{err}");
    // Nothing is appended past it either.
    assert!(write().is_err());

    // A mark past the log's end is named too, by the catch-up and by an append.
    set_mark("999999");
    let err = mem.index_full_text(100).unwrap_err().to_string();
    assert!(
        err.contains("999999") && err.contains("past the log"),
        "{err}"
    );
    let err = write().unwrap_err().to_string();
    assert!(err.contains("past the log"), "{err}");
    assert_eq!(mem.size().unwrap(), size, "nothing was appended meanwhile");

    // The repair the message names: the mark at 0 indexes every entry again, replacing the
    // documents already there.
    set_mark("0");
    let inline = setup_with(SqliteStore::in_memory().unwrap());
    write_notes(&inline, 0, 10);
    assert_same_answers(&mem, &inline, "after the repair");
    assert_eq!(pending(&mem), 0);
}

#[test]
fn an_in_memory_store_defers_too() {
    // One connection for everything: the catch-up reads the mark, then takes the writer.
    let deferred = setup_with(SqliteStore::in_memory().unwrap());
    assert!(deferred.defer_full_text().unwrap());
    let inline = setup_with(SqliteStore::in_memory().unwrap());
    write_notes(&deferred, 0, 80);
    write_notes(&inline, 0, 80);
    assert_eq!(pending(&deferred), 80);
    assert_same_answers(&deferred, &inline, "in memory");
    assert_eq!(pending(&deferred), 0);
}
