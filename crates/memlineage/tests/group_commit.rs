//! Group commit (docs/store.md, "Durability and concurrency"): a batch of entries is one
//! SQLite transaction — one commit, so one fsync of the WAL under `synchronous=FULL` — while
//! single writes commit once each.

mod common;

use common::p;

use common::setup_with;
use memlineage::{SqliteStore, WriteRequest};
use memlineage_core::entry::EntryKind;

#[test]
fn a_batch_commits_once() {
    let dir = tempfile::tempdir().unwrap();
    let mem = setup_with(SqliteStore::open(&dir.path().join("store.db")).unwrap());
    let size = mem.size().unwrap();
    let before = mem.commits().unwrap();
    // Large enough to take the parallel signing path, and a small one.
    for n in [100usize, 3] {
        let start = mem.commits().unwrap();
        let reqs: Vec<WriteRequest> = (0..n)
            .map(|i| {
                WriteRequest::new(&p("agent"), EntryKind::Observation, format!("fact {n}/{i}"))
            })
            .collect();
        let written = mem.write_batch(reqs).unwrap();
        assert_eq!(written.len(), n);
        assert_eq!(
            mem.commits().unwrap() - start,
            1,
            "a batch of {n} is one commit"
        );
    }
    for i in 0..3 {
        mem.write(WriteRequest::new(
            &p("agent"),
            EntryKind::Observation,
            format!("single {i}"),
        ))
        .unwrap();
    }
    assert_eq!(mem.commits().unwrap() - before, 2 + 3);
    assert_eq!(mem.size().unwrap(), size + 106);
    assert!(mem.verify(&mut |_, _| {}).unwrap().ok());
}
