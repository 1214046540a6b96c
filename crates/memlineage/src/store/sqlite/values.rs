//! The value index (issue 19, `docs/store.md`, "Value index"): keys of the typed values each
//! content entry carries, written in the append transaction beside the entry and never deleted
//! (an erased entry keeps its keys, so erasure cannot launder a value).
//!
//! Two tables hold it, so that an append does not pay a random B-tree insert per value
//! (schema version 2). A value key is a hash: inserted into one table ordered by key, every
//! key of a group commit lands on its own leaf page once the index outgrows the group, and
//! SQLite writes each dirtied 4 KiB page to the WAL (and later into the database file) — at
//! ≈ 4 keys per entry that was most of a commit's pages and of the service's CPU per write.
//! So an append writes its keys to `value_keys_tail`, ordered by entry index (rows appended at
//! the right edge, a few pages per group), and when the tail spans
//! [`SqliteStore::value_tail`](super::SqliteStore::value_tail) entries it is moved into
//! `value_keys` in sorted passes, which dirty each leaf page at most once for thousands of
//! entries — a slice of the keys per append, over several appends (`merge_slices.rs`) — and
//! the index up to which the tail was merged is recorded (`value_keys_merged`). A lookup reads both tables in one snapshot: `value_keys` by key,
//! and the tail through the handle's copy of it ([`Tail`], `value_tail.rs`).

use super::read::index_from;
use super::to_i64;
use super::value_tail::Tail;
use crate::error::Error;
use memlineage_core::gate::ValueKey;
use rusqlite::{Connection, OptionalExtension, params};

/// Entries whose keys stay in the tail before an append merges it into `value_keys`: the
/// merge dirties each leaf page of `value_keys` at most once, so the larger the tail the
/// fewer pages per entry (≈ 4 keys per entry fill ≈ 400 leaf pages per 16,384 entries); the
/// handle keeps the tail's keys in memory (≈ 10 MiB at this size). 32,768 rather than 16,384
/// since 2026-12-05: on a store of 200,000 entries the merges were ≈ 6 % of the service's CPU
/// per write, and its durable writes rose ≈ 6 % (`docs/performance.md`, "Fewer full-text
/// merges, a longer value tail, the request log in batches"); a merge does about
/// twice the work, half as often, spread over the appends that follow (`merge_slices.rs`).
pub(super) const TAIL_ENTRIES: u64 = 32_768;

/// The leaf indices of the entries indexed under `key` with index ≥ `from`, ascending, at most
/// `limit`: the merged table and the tail, read in one snapshot (a read transaction is begun
/// when the connection is not in one, so that a merge committed between the two reads cannot
/// hide a row from both).
pub(super) fn carriers(
    conn: &Connection,
    tail: &Tail,
    key: &ValueKey,
    from: u64,
    limit: usize,
) -> Result<Vec<u64>, Error> {
    in_read_transaction(conn, |conn| {
        let mut found = merged_carriers(conn, key, from, limit)?;
        found.extend(tail.carriers(conn, key, from)?);
        found.sort_unstable();
        found.dedup();
        found.truncate(limit);
        Ok(found)
    })
}

fn merged_carriers(
    conn: &Connection,
    key: &ValueKey,
    from: u64,
    limit: usize,
) -> Result<Vec<u64>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT idx FROM value_keys WHERE key = ?1 AND idx >= ?2 ORDER BY idx LIMIT ?3",
    )?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map(
        params![key.as_bytes().as_slice(), to_i64(from)?, limit],
        |r| r.get::<_, i64>(0),
    )?;
    rows.map(|idx| index_from(idx?)).collect()
}

/// Runs `f` inside a read transaction: the connection's own when it is in one (a snapshot,
/// the append transaction), else one begun and ended here.
pub(super) fn in_read_transaction<R>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<R, Error>,
) -> Result<R, Error> {
    if !conn.is_autocommit() {
        return f(conn);
    }
    conn.prepare_cached("BEGIN")?.execute([])?;
    let result = f(conn);
    let ended = conn
        .prepare_cached("COMMIT")
        .and_then(|mut s| s.execute([]));
    if let Err(e) = ended {
        // A read transaction left open would pin its snapshot on this pooled connection.
        let _ = conn.execute_batch("ROLLBACK");
        return Err(e.into());
    }
    result
}

/// Inserts `(key, index)` rows of newly appended entries into the tail (present ones are
/// kept: the rows are a set).
pub(super) fn insert_appended<'r>(
    tx: &Connection,
    rows: impl IntoIterator<Item = (&'r ValueKey, u64)>,
) -> Result<(), Error> {
    insert(
        tx,
        "INSERT OR IGNORE INTO value_keys_tail (key, idx) VALUES (?1, ?2)",
        rows,
    )
}

/// Inserts `(key, index)` rows into the merged table directly: how the handle fills the index
/// of entries logged before it existed (any index; a lookup reads both tables).
pub(super) fn insert_filled<'r>(
    tx: &Connection,
    rows: impl IntoIterator<Item = (&'r ValueKey, u64)>,
) -> Result<(), Error> {
    insert(
        tx,
        "INSERT OR IGNORE INTO value_keys (key, idx) VALUES (?1, ?2)",
        rows,
    )
}

fn insert<'r>(
    tx: &Connection,
    sql: &str,
    rows: impl IntoIterator<Item = (&'r ValueKey, u64)>,
) -> Result<(), Error> {
    let mut put = tx.prepare_cached(sql)?;
    for (key, index) in rows {
        put.execute(params![key.as_bytes().as_slice(), to_i64(index)?])?;
    }
    Ok(())
}

/// The index below which every tail row was merged into `value_keys` (0 before the first
/// merge): the tail holds only rows at or above it.
pub(super) fn merged_below(conn: &Connection) -> Result<u64, Error> {
    let below: Option<i64> = conn
        .prepare_cached("SELECT below FROM value_keys_merged WHERE id = 0")?
        .query_row([], |r| r.get(0))
        .optional()?;
    below.map_or(Ok(0), index_from)
}

/// Inside the upgrade's transaction (`upgrade` in `mod.rs`), once the log holds `size`
/// entries: when the tail spans at least `tail_entries` of them, moves every tail row into
/// `value_keys` in key order, the tail's ids into `entry_ids` (`ids.rs`), and records `size`
/// as the new merge point, all at once (appends merge in slices, `merge_slices.rs`). All in
/// the caller's transaction, so a crash leaves each row in exactly one of the tables.
pub(super) fn merge_if_full(tx: &Connection, size: u64, tail_entries: u64) -> Result<bool, Error> {
    let below = merged_below(tx)?;
    if size.saturating_sub(below) < tail_entries.max(1) {
        return Ok(false);
    }
    super::ids::merge(tx, below, size)?;
    tx.prepare_cached(
        "INSERT OR IGNORE INTO value_keys (key, idx) \
         SELECT key, idx FROM value_keys_tail ORDER BY key, idx",
    )?
    .execute([])?;
    tx.prepare_cached("DELETE FROM value_keys_tail")?
        .execute([])?;
    tx.prepare_cached("INSERT OR REPLACE INTO value_keys_merged (id, below) VALUES (0, ?1)")?
        .execute([to_i64(size)?])?;
    Ok(true)
}
