//! The `value_keys` table: the value index (issue 19, `docs/store.md`, "Value index"). Keys of
//! the typed values each content entry carries, written in the append transaction beside the
//! entry and never deleted (an erased entry keeps its keys, so erasure cannot launder a value).

use super::read::index_from;
use super::to_i64;
use crate::error::Error;
use memlineage_core::gate::ValueKey;
use rusqlite::{Connection, params};

/// The leaf indices of the entries indexed under `key` with index ≥ `from`, ascending, at most
/// `limit`.
pub(super) fn carriers(
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

/// Inserts `(key, index)` rows (present ones are kept: the rows are a set).
pub(super) fn insert<'r>(
    tx: &Connection,
    rows: impl IntoIterator<Item = (&'r ValueKey, u64)>,
) -> Result<(), Error> {
    let mut put =
        tx.prepare_cached("INSERT OR IGNORE INTO value_keys (key, idx) VALUES (?1, ?2)")?;
    for (key, index) in rows {
        put.execute(params![key.as_bytes().as_slice(), to_i64(index)?])?;
    }
    Ok(())
}
