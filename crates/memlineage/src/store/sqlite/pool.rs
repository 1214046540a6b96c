//! Reader connections of a file store, kept between reads.
//!
//! In WAL mode readers neither block the writer nor each other, so reads on their own
//! connections run beside an append (another thread of the handle, the HTTP service's other
//! requests). A connection is opened when none is free and kept afterwards, up to
//! [`MAX_IDLE`]; each keeps its own statement and page caches, and a thread that reads
//! repeatedly gets the same one back (last in, first out), caches warm. Readers are set
//! `query_only`: nothing is ever written through them.

use super::configure;
use crate::error::Error;
use rusqlite::{Connection, OpenFlags};
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

/// The most idle reader connections kept.
const MAX_IDLE: usize = 8;

/// Idle reader connections of one database file.
pub(super) struct Pool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl Pool {
    pub(super) fn new(path: PathBuf) -> Pool {
        Pool {
            path,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// A free reader connection (opened if none is idle).
    pub(super) fn get(&self) -> Result<Pooled<'_>, Error> {
        let reused = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        let conn = match reused {
            Some(c) => c,
            None => self.open()?,
        };
        Ok(Pooled::Owned {
            conn: Some(conn),
            pool: self,
            keep: true,
        })
    }

    fn open(&self) -> Result<Connection, Error> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        configure(&conn)?;
        conn.pragma_update(None, "query_only", true)?;
        Ok(conn)
    }

    fn put(&self, conn: Connection) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < MAX_IDLE
        {
            idle.push(conn);
        }
    }
}

/// A connection lent for reading: a pooled reader (returned when dropped), or the single
/// connection of an in-memory database, held locked.
pub(super) enum Pooled<'a> {
    /// A reader of the pool.
    Owned {
        conn: Option<Connection>,
        pool: &'a Pool,
        keep: bool,
    },
    /// The one connection.
    Shared(MutexGuard<'a, Connection>),
}

impl Pooled<'_> {
    /// Closes the connection instead of returning it (its state is unknown).
    pub(super) fn discard(&mut self) {
        if let Pooled::Owned { keep, .. } = self {
            *keep = false;
        }
    }
}

impl Deref for Pooled<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match self {
            // `conn` is `Some` until the value is dropped.
            Pooled::Owned { conn, .. } => conn.as_ref().unwrap_or_else(|| unreachable!()),
            Pooled::Shared(guard) => guard,
        }
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Pooled::Owned { conn, pool, keep } = self
            && let Some(c) = conn.take()
            && *keep
        {
            pool.put(c);
        }
    }
}
