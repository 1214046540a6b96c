//! The full-text index (FTS5 table `search`) written beside the log or after it: which entries
//! it holds, and how the ones it does not yet hold get in.
//!
//! Every entry below a mark is in the index (when it has searchable text: live, not a control
//! record, UTF-8 content); every entry from the mark on is *pending*. The mark is the setting
//! [`PENDING_FROM`], absent when nothing is pending (schema version 5; a store of version 4 or
//! earlier indexed every entry in its append, so it has none). An append indexes its own
//! entries in its transaction when nothing is pending and the handle does not defer; otherwise
//! they join what is pending (setting the mark when it starts the backlog), and
//! [`catch_up`] indexes pending entries, oldest first, in a transaction of its own. Why defer:
//! FTS5 flushes a new segment at every commit and merges them later; the service's committer,
//! which commits a small group at a time, spent ≈ 15–21 % of its time there; its indexer
//! (`memory/full_text_indexer.rs`) indexes when the writes leave room (`docs/performance.md`,
//! "Full-text indexing when the writes leave room").
//!
//! A tombstone removes its target's document only when the target is below the mark; a
//! pending target is skipped by [`catch_up`] (it reads the `forgotten` rows in the same
//! transaction), so a forgotten entry is never in the index either way.

use super::read::{index_from, stored};
use super::to_i64;
use crate::error::Error;
use crate::store::FullTextProgress;
use crate::store::rows::EntryRow;
use memlineage_core::entry::EntryKind;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

/// The setting that holds the first pending entry's index (decimal), when one is pending.
pub(super) const PENDING_FROM: &str = "full_text_pending_from";

/// The first pending entry, `None` when the index holds every entry.
pub(super) fn pending_from(conn: &Connection) -> Result<Option<u64>, Error> {
    let value: Option<String> = conn
        .prepare_cached("SELECT value FROM settings WHERE key = ?1")?
        .query_row([PENDING_FROM], |r| r.get(0))
        .optional()?;
    value
        .map(|v| {
            v.parse::<u64>().map_err(|_| {
                stored(format!(
                    "setting {PENDING_FROM} is {v:?}, not a leaf index (set it to 0 to index \
                     every entry's text again)"
                ))
            })
        })
        .transpose()
}

/// In the append's transaction, after the batch's entry rows (the first at `first`): writes
/// their texts to the index when nothing is pending and `defer` is off, else leaves them
/// pending. Returns the first pending entry afterwards (`None`: the index holds every entry).
pub(super) fn append(
    tx: &Connection,
    entries: &[EntryRow],
    defer: bool,
) -> Result<Option<u64>, Error> {
    let first = entries.first();
    if let Some(from) = pending_from(tx)? {
        if let Some(first) = first.filter(|f| from > f.index) {
            return Err(past_the_end(from, first.index));
        }
        return Ok(Some(from));
    }
    let Some(first) = first else {
        return Ok(None);
    };
    if defer {
        set_pending_from(tx, Some(first.index))?;
        return Ok(Some(first.index));
    }
    let mut insert = tx.prepare_cached("INSERT INTO search (rowid, text) VALUES (?1, ?2)")?;
    for e in entries {
        if let Some(text) = &e.search_text {
            insert.execute(params![to_i64(e.index)?, text])?;
        }
    }
    Ok(None)
}

/// Indexes up to `max` pending entries, oldest first, in the caller's write transaction, and
/// moves the mark past them (removing it once nothing is pending).
pub(super) fn catch_up(tx: &Connection, max: usize) -> Result<FullTextProgress, Error> {
    let Some(from) = pending_from(tx)? else {
        return Ok(FullTextProgress::default());
    };
    let size: i64 = tx
        .prepare_cached("SELECT COALESCE(MAX(idx) + 1, 0) FROM entries")?
        .query_row([], |r| r.get(0))?;
    let size = index_from(size)?;
    if from > size {
        return Err(past_the_end(from, size));
    }
    let to = size.min(from.saturating_add(max as u64));
    let mut pending = tx.prepare_cached(
        "SELECT e.idx, e.kind, c.bytes FROM entries e JOIN content c ON c.idx = e.idx \
         WHERE e.idx >= ?1 AND e.idx < ?2 \
         AND NOT EXISTS (SELECT 1 FROM forgotten f WHERE f.id = e.id) ORDER BY e.idx",
    )?;
    // A document already there is replaced: a mark moved back (to 0, to rebuild the index)
    // indexes its entries again instead of failing.
    let mut insert =
        tx.prepare_cached("INSERT OR REPLACE INTO search (rowid, text) VALUES (?1, ?2)")?;
    let mut rows = pending.query(params![to_i64(from)?, to_i64(to)?])?;
    while let Some(row) = rows.next()? {
        let index: i64 = row.get(0)?;
        let kind: String = row.get(1)?;
        let kind: EntryKind = kind
            .parse()
            .map_err(|e| stored(format!("entry {index}: {e}")))?;
        if kind.is_control() {
            continue;
        }
        let bytes: Option<Vec<u8>> = row.get(2)?;
        if let Some(text) = bytes.as_deref().and_then(|b| std::str::from_utf8(b).ok()) {
            insert.execute(params![index, text])?;
        }
    }
    set_pending_from(tx, (to < size).then_some(to))?;
    Ok(FullTextProgress {
        indexed: to - from,
        pending: size - to,
    })
}

/// [`catch_up`] in a write transaction of its own, committed when it indexed anything.
pub(super) fn commit_catch_up(
    conn: &mut Connection,
    max: usize,
) -> Result<FullTextProgress, Error> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let progress = catch_up(&tx, max)?;
    if progress.indexed > 0 {
        tx.commit()?;
    }
    Ok(progress)
}

/// How many entries are pending, as `conn` sees the log.
pub(super) fn pending(conn: &Connection) -> Result<u64, Error> {
    let Some(from) = pending_from(conn)? else {
        return Ok(0);
    };
    let size: i64 = conn
        .prepare_cached("SELECT COALESCE(MAX(idx) + 1, 0) FROM entries")?
        .query_row([], |r| r.get(0))?;
    Ok(index_from(size)?.saturating_sub(from))
}

/// A mark past the log's end: damaged (the mark only ever names a logged entry).
fn past_the_end(from: u64, size: u64) -> Error {
    stored(format!(
        "setting {PENDING_FROM} is {from}, past the log's {size} entries (set it to 0 to index \
         every entry's text again)"
    ))
}

fn set_pending_from(tx: &Connection, from: Option<u64>) -> Result<(), Error> {
    match from {
        Some(from) => tx
            .prepare_cached("INSERT OR REPLACE INTO settings (key, value) VALUES (?1, ?2)")?
            .execute(params![PENDING_FROM, from.to_string()])?,
        None => tx
            .prepare_cached("DELETE FROM settings WHERE key = ?1")?
            .execute([PENDING_FROM])?,
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;

    #[test]
    fn the_catch_up_indexes_live_text_only_and_moves_the_mark_past_each_chunk() {
        let store = SqliteStore::in_memory().unwrap();
        store
            .with_writer(|c| {
                // (kind, content, forgotten): only 0 and 5 have searchable text.
                let rows: [(&str, Option<&[u8]>, bool); 6] = [
                    ("observation", Some(b"pay the rent"), false),
                    ("gate_decision", Some(b"{\"decision\":\"deny\"}"), false),
                    ("observation", Some(b"\xff\xfe not text"), false),
                    ("observation", Some(b"forgotten rent"), true),
                    ("derived", None, true),
                    ("tool_output", Some(b"rent is due"), false),
                ];
                for (i, (kind, bytes, forgotten)) in rows.into_iter().enumerate() {
                    let id = [i as u8; 32];
                    c.execute(
                        "INSERT INTO entries (idx, id, leaf, scope, writer, kind, label) \
                         VALUES (?1, ?2, x'00', 's', 'w', ?3, 'TRUSTED')",
                        params![i as i64, id.as_slice(), kind],
                    )?;
                    c.execute(
                        "INSERT INTO content (idx, bytes) VALUES (?1, ?2)",
                        params![i as i64, bytes],
                    )?;
                    if forgotten {
                        c.execute(
                            "INSERT INTO forgotten (id, tombstone, erased) VALUES (?1, x'00', 0)",
                            [id.as_slice()],
                        )?;
                    }
                }
                assert_eq!(catch_up(c, 10)?, FullTextProgress::default());
                set_pending_from(c, Some(0))?;
                assert_eq!(pending(c)?, 6);
                let first = catch_up(c, 4)?;
                assert_eq!((first.indexed, first.pending), (4, 2));
                assert_eq!(pending_from(c)?, Some(4));
                let rest = catch_up(c, 100)?;
                assert_eq!((rest.indexed, rest.pending), (2, 0));
                assert_eq!(pending_from(c)?, None);
                let indexed: Vec<i64> = c
                    .prepare("SELECT rowid FROM search WHERE search MATCH 'rent' ORDER BY rowid")?
                    .query_map([], |r| r.get(0))?
                    .collect::<Result<_, _>>()?;
                assert_eq!(indexed, vec![0, 5]);
                Ok(())
            })
            .unwrap();
    }
}
