//! Merging the tail (`values.rs`, `ids.rs`) a slice at a time, over several appends, so that
//! no append stops every writer for the whole merge (`docs/store.md`, "Merges in slices").
//!
//! A merge dirties every leaf page of `entry_ids` and `value_keys` once: on a store of 400,000
//! entries that was 100–290 ms of inserts and a 15–90 ms commit, every 32,768 entries, during
//! which every request of the HTTP service's group commit waited (`docs/performance.md`,
//! "Merges in slices, smaller checkpoints"). Here the append that finds the tail spanning the
//! handle's tail size starts a merge of the entries below its first one, `[below, upto)`, and
//! records it in `value_keys_merging`; that append and the next ones each move one or more
//! *slices* of it — the ids and value keys whose first byte falls in a range — into
//! `entry_ids` and `value_keys`, in key order, so each slice dirties its own share of the leaf
//! pages once. The append that moves the last slice deletes the merged rows from
//! `value_keys_tail`, moves the merge point to `upto` and ends the merge.
//!
//! Readers need nothing new: a lookup already reads both tables in one snapshot and drops
//! duplicates, and during a merge a moved row is in both (the tail keeps it until the merge
//! ends). Everything happens inside the append's transaction, so a crash leaves the merge
//! where its last committed append left it, and the next writer goes on from there. A
//! recorded merge that does not fit the merge point (`upto` not above it — a store merged by
//! an earlier version of this library meanwhile) is dropped and a new one started when due.

use super::to_i64;
use super::value_tail::Tail;
use super::values::merged_below;
use crate::error::Error;
use rusqlite::{Connection, OptionalExtension, params};

/// The slices of one merge: one per value of a key's (an id's) first byte.
pub(super) const SLICES: u16 = 256;

/// The merge in progress, if any, as `(upto, done)`: every tail row of an entry in
/// `[merge point, upto)` whose first key byte is below `done` is also in the merged tables.
fn in_progress(tx: &Connection) -> Result<Option<(u64, u16)>, Error> {
    let row: Option<(i64, i64)> = tx
        .prepare_cached("SELECT upto, done FROM value_keys_merging WHERE id = 0")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(row.and_then(|(upto, done)| Some((u64::try_from(upto).ok()?, u16::try_from(done).ok()?))))
}

/// How many slices an append of `entries` entries moves: enough that a merge ends before a
/// quarter of the tail size more entries were appended (all of it at once for tails of up to
/// 4 entries per 256 slices, as tests use), at least one.
fn slices_per_append(entries: usize, tail_entries: u64) -> u16 {
    let quarter = (tail_entries / 4).max(1);
    let wanted = u64::from(SLICES)
        .saturating_mul(entries as u64)
        .div_ceil(quarter);
    u16::try_from(wanted.clamp(1, u64::from(SLICES))).unwrap_or(SLICES)
}

/// Inside the append transaction of a batch of `entries` entries whose first index is
/// `first`, before its rows are written (so the handle's copy of the tail holds exactly the
/// committed rows): starts a merge when the tail spans `tail_entries` entries, and moves the
/// next slices of the one in progress. Returns whether the merge point moved.
pub(super) fn step(
    tx: &Connection,
    tail: &Tail,
    first: u64,
    entries: usize,
    tail_entries: u64,
) -> Result<bool, Error> {
    let below = merged_below(tx)?;
    let (upto, done) = match in_progress(tx)? {
        Some((upto, done)) if upto > below && done < SLICES => (upto, done),
        stale => {
            if stale.is_some() {
                tx.prepare_cached("DELETE FROM value_keys_merging")?
                    .execute([])?;
            }
            if first.saturating_sub(below) < tail_entries.max(1) {
                return Ok(false);
            }
            (first, 0)
        }
    };
    let end = done + slices_per_append(entries, tail_entries).min(SLICES - done);
    let (ids, keys) = tail.merge_rows(tx, below, upto, done, end)?;
    {
        // A plain insert: an id already there fails the append, as the unique index did.
        let mut put_id = tx.prepare_cached("INSERT INTO entry_ids (id, idx) VALUES (?1, ?2)")?;
        for (id, index) in &ids {
            put_id.execute(params![id.as_bytes().as_slice(), to_i64(*index)?])?;
        }
        let mut put_key =
            tx.prepare_cached("INSERT OR IGNORE INTO value_keys (key, idx) VALUES (?1, ?2)")?;
        for (key, index) in &keys {
            put_key.execute(params![key.as_bytes().as_slice(), to_i64(*index)?])?;
        }
    }
    if end < SLICES {
        tx.prepare_cached(
            "INSERT OR REPLACE INTO value_keys_merging (id, upto, done) VALUES (0, ?1, ?2)",
        )?
        .execute(params![to_i64(upto)?, end])?;
        return Ok(false);
    }
    tx.prepare_cached("DELETE FROM value_keys_tail WHERE idx < ?1")?
        .execute([to_i64(upto)?])?;
    tx.prepare_cached("INSERT OR REPLACE INTO value_keys_merged (id, below) VALUES (0, ?1)")?
        .execute([to_i64(upto)?])?;
    tx.prepare_cached("DELETE FROM value_keys_merging")?
        .execute([])?;
    tail.merge_done();
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merge_ends_within_a_quarter_of_the_tail() {
        // The service's groups of ≈ 30 into a tail of 32,768: one slice per append.
        assert_eq!(slices_per_append(30, 32_768), 1);
        // Batches of 256: 8 slices, 32 appends.
        assert_eq!(slices_per_append(256, 32_768), 8);
        // Tiny tails (tests): the whole merge in one append.
        assert_eq!(slices_per_append(1, 4), SLICES);
        assert_eq!(slices_per_append(1, 1), SLICES);
        assert_eq!(slices_per_append(0, 32_768), 1);
        // Whatever the sizes, every merge ends after at most 256 appends.
        for (n, t) in [(1, 1 << 40), (usize::MAX, 1), (7, 1000)] {
            let s = slices_per_append(n, t);
            assert!((1..=SLICES).contains(&s), "{n} {t}: {s}");
        }
    }
}
