//! The handle's copy of the value index's tail (`values.rs`): the tail is ordered by entry
//! index, so finding a key in it directly means scanning it; instead each store value keeps
//! the tail's rows in memory by key and, on each lookup, reads only the rows appended since
//! its last one — inside the lookup's own snapshot, so the copy never answers for rows the
//! snapshot cannot see, nor misses rows it can.
//!
//! Consistency, per lookup (a snapshot of `size` entries whose tail was merged below
//! `below`):
//! - `below` equals the copy's: the copy is extended with the tail rows from where it stopped
//!   up to `size`, and answers with its rows under `size` (another thread may have extended
//!   it further from a newer snapshot);
//! - `below` is newer than the copy's: a merge moved every row under it into `value_keys`, so
//!   the copy starts again at `below`;
//! - `below` is older (a snapshot begun before a merge that another lookup already saw): the
//!   copy no longer holds the rows this snapshot's tail still has, so the tail is scanned in
//!   the snapshot instead — slower, never wrong.
//!
//! A store written by schema version 1 has no tail until it is opened for writing; a lookup
//! through a read-only handle on one finds none (its keys are all in `value_keys`).

use super::read::index_from;
use super::to_i64;
use crate::error::Error;
use crate::store::BackendRead;
use memlineage_core::gate::ValueKey;
use rusqlite::{Connection, params};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The copy of one store's tail.
#[derive(Default)]
pub(crate) struct Tail {
    state: Mutex<Copy>,
    /// The tail table was seen (a version-1 store opened read-only may lack it).
    present: AtomicBool,
}

#[derive(Default)]
struct Copy {
    /// The merge point the rows belong to.
    below: u64,
    /// Rows of entries with index < `next` (and ≥ `below`) are held.
    next: u64,
    /// Leaf indices by key, ascending.
    keys: HashMap<ValueKey, Vec<u64>>,
}

impl Tail {
    /// The tail's carriers of `key` with index ≥ `from`, ascending, as the snapshot `conn` is
    /// in sees them (the caller holds a read transaction).
    pub(super) fn carriers(
        &self,
        conn: &Connection,
        key: &ValueKey,
        from: u64,
    ) -> Result<Vec<u64>, Error> {
        if !self.present(conn)? {
            return Ok(Vec::new());
        }
        let below = super::values::merged_below(conn)?;
        // The snapshot's log size, read as every other read of the store reads it.
        let size = BackendRead::size(&super::read::Reader(conn, self))?;
        let mut copy = self.state.lock().map_err(|_| {
            Error::internal("value tail mutex poisoned by a panic in another thread")
        })?;
        if below < copy.below {
            drop(copy);
            return scan(conn, key, from);
        }
        if below > copy.below {
            *copy = Copy {
                below,
                next: below,
                keys: HashMap::new(),
            };
        }
        if copy.next < size {
            let mut stmt = conn.prepare_cached(
                "SELECT idx, key FROM value_keys_tail WHERE idx >= ?1 AND idx < ?2 ORDER BY idx",
            )?;
            let mut rows = stmt.query(params![to_i64(copy.next)?, to_i64(size)?])?;
            while let Some(row) = rows.next()? {
                let index = index_from(row.get(0)?)?;
                let bytes: Vec<u8> = row.get(1)?;
                let key = ValueKey::from_slice(&bytes).ok_or_else(|| {
                    Error::integrity(
                        crate::error::IntegrityCheck::StoredValue,
                        format!("value key of entry {index} is not 16 bytes"),
                    )
                })?;
                copy.keys.entry(key).or_default().push(index);
            }
            copy.next = size;
        }
        Ok(copy
            .keys
            .get(key)
            .map(|v| {
                v.iter()
                    .copied()
                    .filter(|&i| i >= from && i < size)
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Drops the copy: the next lookup reads the tail again from the table.
    pub(super) fn forget(&self) {
        if let Ok(mut copy) = self.state.lock() {
            *copy = Copy::default();
        }
    }

    fn present(&self, conn: &Connection) -> Result<bool, Error> {
        if self.present.load(Ordering::Acquire) {
            return Ok(true);
        }
        let found: i64 = conn
            .prepare_cached(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'value_keys_tail'",
            )?
            .query_row([], |r| r.get(0))?;
        if found > 0 {
            self.present.store(true, Ordering::Release);
        }
        Ok(found > 0)
    }
}

/// The tail's carriers of `key` read from the table itself (a scan of the tail from `from`).
fn scan(conn: &Connection, key: &ValueKey, from: u64) -> Result<Vec<u64>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT idx FROM value_keys_tail WHERE idx >= ?1 AND key = ?2 ORDER BY idx",
    )?;
    let rows = stmt.query_map(params![to_i64(from)?, key.as_bytes().as_slice()], |r| {
        r.get::<_, i64>(0)
    })?;
    rows.map(|idx| index_from(idx?)).collect()
}
