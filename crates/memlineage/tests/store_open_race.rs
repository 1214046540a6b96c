//! Handles opening one store file at the same moment, the file new or not: every open
//! succeeds (SQLite's switch to WAL and the schema's creation race between connections, and
//! a lost race must wait its turn rather than fail with "database is locked").

use memlineage::SqliteStore;
use std::sync::{Arc, Barrier};

const OPENERS: usize = 8;

#[test]
fn handles_creating_one_store_at_once_all_open_it() {
    for round in 0..40 {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = Arc::new(dir.path().join("store.db"));
        let barrier = Arc::new(Barrier::new(OPENERS));
        let threads: Vec<_> = (0..OPENERS)
            .map(|_| {
                let (path, barrier) = (Arc::clone(&path), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    barrier.wait();
                    SqliteStore::open(&path).map(|_| ())
                })
            })
            .collect();
        for t in threads {
            let opened = t.join().expect("opener thread");
            assert!(opened.is_ok(), "round {round}: {:?}", opened.err());
        }
    }
}
