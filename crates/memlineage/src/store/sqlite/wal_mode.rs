//! Switching a connection to WAL when other connections may be doing the same.
//!
//! SQLite's busy timeout does not cover this switch: it rewrites the file header's version
//! bytes by upgrading a read transaction to a write one, and an upgrade that finds another
//! connection writing fails at once with `SQLITE_BUSY` ("database is locked") rather than
//! wait, since waiting inside a read transaction could deadlock (SQLite, `lockingv3.html` and
//! `sqlite3_busy_timeout`). Processes that create one new store file together all make this
//! switch on it, and without a retry all but one of them could fail to open it.

use crate::error::{Error, StorageError, sqlite_busy};
use rusqlite::Connection;
use std::time::{Duration, Instant};

/// How long a connection sleeps between tries of a switch that found the file busy.
const RETRY_PAUSE: Duration = Duration::from_millis(2);

/// Puts `conn` in WAL mode, trying again while another connection holds the lock the switch
/// needs, for at most `timeout`. A switch that SQLite declines without an error (it answers
/// with the mode it kept) is tried again the same way, and is an error once `timeout` has
/// passed, so a store is never used in a journal mode its durability does not assume.
pub(super) fn switch_to_wal(conn: &Connection, timeout: Duration) -> Result<(), Error> {
    let start = Instant::now();
    loop {
        let kept = match conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))
        {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => Some(mode),
            Err(e) if sqlite_busy(&e) => None,
            Err(e) => return Err(e.into()),
        };
        if start.elapsed() >= timeout {
            let why = match kept {
                Some(mode) => format!("SQLite kept journal mode '{mode}'"),
                None => "database is locked".to_owned(),
            };
            return Err(Error::Storage(StorageError {
                backend: "sqlite",
                message: format!(
                    "could not switch the store to WAL for {timeout:?} ({why}): another \
                     program holds the file; close it and open the store again"
                ),
                retryable: true,
                source: None,
            }));
        }
        std::thread::sleep(RETRY_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_database_switches_to_wal() {
        let dir = tempfile::tempdir().expect("temp dir");
        let conn = Connection::open(dir.path().join("s.db")).expect("open");
        switch_to_wal(&conn, Duration::from_secs(1)).expect("switch");
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .expect("mode");
        assert_eq!(mode, "wal");
    }

    #[test]
    fn a_switch_held_up_past_the_timeout_is_an_error_that_says_so() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.db");
        let holder = Connection::open(&path).expect("open holder");
        holder
            .execute_batch("CREATE TABLE t (x); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1);")
            .expect("hold the file");
        let conn = Connection::open(&path).expect("open");
        // No busy handler, so that every try meets the lock and the retries are what waits.
        conn.busy_timeout(Duration::ZERO).expect("no busy timeout");
        let err = switch_to_wal(&conn, Duration::from_millis(50)).expect_err("busy");
        assert!(err.to_string().contains("locked"), "{err}");
        holder.execute_batch("COMMIT").expect("release");
        switch_to_wal(&conn, Duration::from_secs(1)).expect("switch once released");
    }
}
