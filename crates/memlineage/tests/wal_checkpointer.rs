//! WAL checkpoints on a thread of their own (`memory/wal_checkpointer.rs`, docs/store.md,
//! "Checkpoints"): they run beside commits, move the log's pages into the database file, and
//! lose nothing — not even when the process dies right after one, with more commits in the log
//! (the crash runs in a child process, this test binary run again, that aborts).

mod common;

use common::{key, p, setup_with};
use memlineage::memory::WalCheckpointer;
use memlineage::store::WalCheckpoint;
use memlineage::{Memory, SqliteStore, StoreLocation, WriteRequest};
use memlineage_core::entry::EntryKind;
use std::process::Command;
use std::sync::Arc;
use std::sync::mpsc;

const CHILD_STORE: &str = "MEMLINEAGE_TEST_CHECKPOINT_CHILD_STORE";

fn note(i: usize) -> WriteRequest {
    WriteRequest::new(
        &p("agent"),
        EntryKind::Observation,
        format!(
            "note {i}: the invoice from ACME is due on 2026-12-{:02}",
            i % 28 + 1
        ),
    )
}

/// Writes single entries (one commit each) until `checkpoints` checkpoints that moved pages
/// were reported; returns the entries written.
fn write_until(
    mem: &Memory,
    reports: &mpsc::Receiver<WalCheckpoint>,
    checkpoints: usize,
    mut acked: impl FnMut(&memlineage::Written),
) -> usize {
    let (mut seen, mut written) = (0, 0);
    while seen < checkpoints {
        assert!(written < 100_000, "no checkpoint after {written} commits");
        let w = mem.write(note(written)).unwrap();
        acked(&w);
        written += 1;
        while let Ok(done) = reports.try_recv() {
            if done.checkpointed_pages > 0 {
                seen += 1;
            }
        }
    }
    written
}

#[test]
fn checkpoints_run_beside_commits_and_move_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mem = Arc::new(setup_with(SqliteStore::open(&path).unwrap()));
    let (tx, rx) = mpsc::channel();
    let checkpointer = WalCheckpointer::start(Arc::clone(&mem), move |c| {
        let _ = tx.send(c);
    })
    .unwrap()
    .expect("a file store has a WAL to checkpoint");
    let written = write_until(&mem, &rx, 2, |_| {});
    checkpointer.stop().unwrap();
    assert!(mem.verify(&mut |_, _| {}).unwrap().ok());
    let size = mem.size().unwrap();
    drop(mem);
    // Every entry is there for a new handle (the log was checkpointed and reset meanwhile).
    let again = Memory::open(SqliteStore::open(&path).unwrap()).unwrap();
    assert_eq!(again.size().unwrap(), size);
    assert!(size >= written as u64);
    assert!(again.verify(&mut |_, _| {}).unwrap().ok());
}

#[test]
fn nothing_starts_for_a_store_without_a_wal() {
    let mem = Arc::new(setup_with(SqliteStore::in_memory().unwrap()));
    assert!(WalCheckpointer::start(mem, |_| {}).unwrap().is_none());
    let mem = Arc::new(setup_with(memlineage::MemoryStore::new()));
    assert!(!mem.defer_wal_checkpoints().unwrap());
    assert_eq!(mem.checkpoint_wal().unwrap(), None);
}

/// The child: writes with the checkpointer running until two checkpoints moved pages, a few
/// more, then dies on the spot. Does nothing unless run by `a_crash_after_checkpoints_loses_no_acknowledged_entry`.
#[test]
fn checkpoint_crash_child() {
    let Some(store) = std::env::var_os(CHILD_STORE) else {
        return;
    };
    let location: StoreLocation = store.to_str().unwrap().parse().unwrap();
    let mem = Arc::new(Memory::open_at(&location).unwrap());
    mem.keys().insert(&p("operator"), key(1));
    mem.keys().insert(&p("agent"), key(2));
    let (tx, rx) = mpsc::channel();
    let _checkpointer = WalCheckpointer::start(Arc::clone(&mem), move |c| {
        let _ = tx.send(c);
    })
    .unwrap()
    .unwrap();
    use std::io::Write;
    let mut out = std::io::stdout();
    writeln!(out).unwrap();
    let mut ack = |w: &memlineage::Written| {
        writeln!(out, "ACK {} {}", w.id.to_hex(), w.index).unwrap();
        out.flush().unwrap();
    };
    let written = write_until(&mem, &rx, 2, &mut ack);
    for i in 0..50 {
        ack(&mem.write(note(written + i)).unwrap());
    }
    std::process::abort();
}

#[test]
fn a_crash_after_checkpoints_loses_no_acknowledged_entry() {
    let dir = tempfile::tempdir().unwrap();
    let file = format!("sqlite:{}", dir.path().join("store.db").display());
    {
        let location: StoreLocation = file.parse().unwrap();
        setup_with(location.open(memlineage::OpenMode::Create).unwrap());
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "checkpoint_crash_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_STORE, &file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "the child should have died: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let acked = common::acknowledged(&stdout);
    assert!(acked.len() > 64, "{} entries acknowledged", acked.len());
    let location: StoreLocation = file.parse().unwrap();
    let mem = Memory::open_at(&location).unwrap();
    for (id, index) in &acked {
        let view = mem
            .get(id)
            .unwrap_or_else(|e| panic!("acknowledged entry {index} lost: {e}"));
        assert_eq!(view.index, *index);
    }
    assert_eq!(mem.size().unwrap(), acked.last().unwrap().1 + 1);
    assert!(mem.verify(&mut |_, _| {}).unwrap().ok());
}
