//! WAL checkpoints run by the owner of a file store on a thread of its own, off the thread
//! that commits (`docs/store.md`, "Checkpoints").
//!
//! By default SQLite checkpoints inside the commit that brings the WAL past
//! `wal_autocheckpoint` pages: that commit also copies thousands of pages into the database
//! file and fsyncs it before it returns, and every write queued behind it waits — in the
//! HTTP service's group commit, a whole group of requests (`docs/performance.md`, "WAL
//! checkpoints off the committer"). [`Checkpoints::run`] does the same work on its own
//! connection with `PRAGMA wal_checkpoint(PASSIVE)`, which never blocks the writer or the
//! readers (SQLite, "Write-Ahead Logging", §3 "Checkpointing"): it copies the frames that no
//! reader still needs and leaves the rest for the next run. (SQLite restarts the WAL file from
//! its beginning only when a checkpoint copied every frame before the next write began; under
//! a steady stream of commits that is the writer's own checkpoint at the raised threshold, which
//! then has only the frames since the last run here to copy.)
//!
//! Durability is SQLite's, unchanged: every commit still fsyncs the WAL; a checkpoint with
//! `synchronous=FULL` fsyncs the WAL before copying and the database file after, so the file
//! never holds a page the WAL on disk does not. Deferring only raises the writer's own
//! threshold ([`DEFERRED_AUTOCHECKPOINT_PAGES`]) as a safety net: if the owner's thread stops
//! or falls behind, the writer checkpoints as before, so the WAL stays bounded.

use super::{SqliteStore, WAL_CHECKPOINT_PAGES, configure};
use crate::error::Error;
use crate::store::WalCheckpoint;
use rusqlite::{Connection, OpenFlags};
use std::sync::Mutex;

/// The writer's own threshold once checkpoints are deferred: four times the usual one, so
/// that only a checkpointing thread that fell far behind (or stopped) leaves the work to a
/// commit again.
pub(super) const DEFERRED_AUTOCHECKPOINT_PAGES: i64 = 4 * WAL_CHECKPOINT_PAGES;

/// The connection checkpoints run on: opened at the first run and kept, so that a run costs
/// no open.
#[derive(Default)]
pub(super) struct Checkpoints {
    conn: Mutex<Option<Connection>>,
}

impl Checkpoints {
    /// One passive checkpoint of the store at `path`.
    fn run(&self, path: &std::path::Path) -> Result<WalCheckpoint, Error> {
        let mut slot = self
            .conn
            .lock()
            .map_err(|_| Error::internal("checkpoint connection poisoned by a panic"))?;
        let conn = match slot.as_mut() {
            Some(c) => c,
            None => slot.insert(open(path)?),
        };
        // Columns: whether it was blocked (another checkpoint held the lock), the frames in
        // the WAL, the frames now in the database file (SQLite, "PRAGMA wal_checkpoint").
        let ran = conn
            .prepare_cached("PRAGMA wal_checkpoint(PASSIVE)")
            .and_then(|mut s| s.query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))));
        let (busy, wal, done): (i64, i64, i64) = match ran {
            Ok(row) => row,
            Err(e) => {
                // The next run opens a new connection rather than retry on one that failed.
                *slot = None;
                return Err(e.into());
            }
        };
        Ok(WalCheckpoint {
            busy: busy != 0,
            wal_pages: u64::try_from(wal).unwrap_or(0),
            checkpointed_pages: u64::try_from(done).unwrap_or(0),
        })
    }
}

/// A read-write connection (checkpointing writes the database file) that never writes a
/// row: it only runs checkpoints. `synchronous=FULL`, so that its checkpoints sync the WAL
/// before copying and the database file after.
fn open(path: &std::path::Path) -> Result<Connection, Error> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    configure(&conn)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

impl SqliteStore {
    /// Leaves checkpoints to [`SqliteStore::checkpoint_wal_now`] (see the module): the writer
    /// checkpoints only past [`DEFERRED_AUTOCHECKPOINT_PAGES`]. `false` (nothing changed) for
    /// an in-memory database or a store opened read-only, which have no WAL to checkpoint.
    pub(super) fn defer_checkpoints(&self) -> Result<bool, Error> {
        if self.path.is_none() || self.read_only {
            return Ok(false);
        }
        self.lock_writer()?.pragma_update(
            None,
            "wal_autocheckpoint",
            DEFERRED_AUTOCHECKPOINT_PAGES,
        )?;
        Ok(true)
    }

    /// One passive checkpoint on the checkpoint connection; `None` for an in-memory database
    /// or a store opened read-only.
    pub(super) fn checkpoint_wal_now(&self) -> Result<Option<WalCheckpoint>, Error> {
        match (&self.path, self.read_only) {
            (Some(path), false) => self.checkpoints.run(path).map(Some),
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn autocheckpoint(store: &SqliteStore) -> i64 {
        store
            .lock_writer()
            .unwrap()
            .pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn deferring_raises_only_the_writers_threshold() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("s.db")).unwrap();
        assert_eq!(autocheckpoint(&store), WAL_CHECKPOINT_PAGES);
        assert!(store.defer_checkpoints().unwrap());
        assert_eq!(autocheckpoint(&store), DEFERRED_AUTOCHECKPOINT_PAGES);
        let memory = SqliteStore::in_memory().unwrap();
        assert!(!memory.defer_checkpoints().unwrap());
        assert_eq!(memory.checkpoint_wal_now().unwrap(), None);
    }

    #[test]
    fn a_checkpoint_moves_every_committed_page_when_nobody_reads() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("s.db")).unwrap();
        store.defer_checkpoints().unwrap();
        store
            .lock_writer()
            .unwrap()
            .execute_batch(
                "CREATE TABLE t (x BLOB); \
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 64) \
                 INSERT INTO t SELECT randomblob(2000) FROM n;",
            )
            .unwrap();
        let first = store.checkpoint_wal_now().unwrap().unwrap();
        assert!(!first.busy);
        assert!(first.wal_pages > 30, "{first:?}");
        assert_eq!(first.checkpointed_pages, first.wal_pages);
        // The rows are in the database file: a connection that reads it sees them.
        let rows: i64 = Connection::open(dir.path().join("s.db"))
            .unwrap()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 64);
    }
}
