//! A long-lived writer's in-memory filter of the ids merged into `entry_ids` (`docs/store.md`,
//! "Id index"): what lets an append skip the index for ids it cannot hold.
//!
//! Every append refuses an id already in the log (`ids::refuse_present`). The tail's ids are in
//! the handle's copy (`value_tail.rs`); the merged ones are in `entry_ids`, a B-tree keyed by a
//! hash, where each id of a group commit costs one descent. A new id is almost never there, so
//! a service's committer spent about a fifth of its time proving absences. The filter holds the
//! first 32 bits of every id merged below a point (`covered`); an id whose prefix it lacks is
//! not in `entry_ids` below that point, and only the others are looked up. A prefix shared by
//! two ids only costs a lookup (at 10⁷ ids, about one new id in 430); the filter never answers
//! "absent" for a logged id, which is all the append's check relies on.
//!
//! Memory: about 6 to 12 bytes per logged id (a hash set of `u32` whose table doubles as it
//! grows; 10 MiB and 203 ms to build for 10⁶ ids), so it is kept only by a handle that asks for
//! it ([`crate::store::Backend::keep_logged_ids`]: the service, before it listens), never by a
//! short-lived one that would read the whole index for one append.

use crate::error::Error;
use crate::store::LoggedIdsSummary;
use memlineage_core::EntryId;
use rusqlite::Connection;
use std::collections::HashSet;

/// The prefixes of the ids of every entry with index < `covered` (and maybe of others: extra
/// prefixes only cost lookups).
#[derive(Debug, Default)]
pub(super) struct LoggedIds {
    prefixes: HashSet<u32>,
    covered: u64,
}

/// What a filter knows of one id asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Merged {
    /// No entry below the covered point has this id.
    No,
    /// Perhaps: look it up.
    Maybe,
}

impl LoggedIds {
    /// Every id of `entry_ids` as the snapshot `conn` is in sees it, covering the entries
    /// below `below`, the snapshot's merge point (`entry_ids` holds each of them; the caller
    /// holds the snapshot's read or write transaction).
    pub(super) fn build(conn: &Connection, below: u64) -> Result<LoggedIds, Error> {
        let count: i64 = conn
            .prepare_cached("SELECT COUNT(*) FROM entry_ids")?
            .query_row([], |r| r.get(0))?;
        let mut prefixes = HashSet::with_capacity(usize::try_from(count).unwrap_or(0));
        let mut stmt = conn.prepare_cached("SELECT id FROM entry_ids")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let bytes = row.get_ref(0)?.as_blob().map_err(|_| {
                Error::integrity(
                    crate::error::IntegrityCheck::EntryId,
                    "an id of the id index is not a blob",
                )
            })?;
            prefixes.insert(prefix_of(bytes));
        }
        Ok(LoggedIds {
            prefixes,
            covered: below,
        })
    }

    /// Every entry below this index is covered.
    pub(super) fn covered(&self) -> u64 {
        self.covered
    }

    /// Adds the id of an entry (of any index).
    pub(super) fn add(&mut self, id: &EntryId) {
        self.prefixes.insert(prefix_of(id.as_bytes()));
    }

    /// Records that every entry below `index` was added.
    pub(super) fn cover(&mut self, index: u64) {
        self.covered = self.covered.max(index);
    }

    /// Whether an entry below the covered point may have `id`.
    pub(super) fn merged(&self, id: &EntryId) -> Merged {
        if self.prefixes.contains(&prefix_of(id.as_bytes())) {
            Merged::Maybe
        } else {
            Merged::No
        }
    }

    pub(super) fn summary(&self) -> LoggedIdsSummary {
        let slots = self.prefixes.capacity() as u64;
        LoggedIdsSummary {
            prefixes: self.prefixes.len() as u64,
            covered: self.covered,
            // A `u32` and a control byte per slot, slots ≈ capacity × 8 / 7.
            bytes: slots * 8 / 7 * 5,
        }
    }
}

/// The first 32 bits of an id (a SHA-256 hash: uniform). A shorter blob (a store edited behind
/// the program's back) is padded with zeros: it can only make the filter say "maybe".
fn prefix_of(bytes: &[u8]) -> u32 {
    let mut four = [0u8; 4];
    for (to, from) in four.iter_mut().zip(bytes) {
        *to = *from;
    }
    u32::from_be_bytes(four)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage_core::Hash256;
    use rusqlite::params;

    fn id(n: u64) -> EntryId {
        EntryId(Hash256::of(&n.to_be_bytes()))
    }

    #[test]
    fn built_from_the_index_it_never_says_no_to_a_merged_id() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(super::super::schema::CREATE_ENTRY_IDS)
            .unwrap();
        for n in 0..2_000u64 {
            conn.execute(
                "INSERT INTO entry_ids (id, idx) VALUES (?1, ?2)",
                params![id(n).as_bytes().as_slice(), n as i64],
            )
            .unwrap();
        }
        let mut logged = LoggedIds::build(&conn, 2_000).unwrap();
        assert_eq!(logged.covered(), 2_000);
        assert!((0..2_000).all(|n| logged.merged(&id(n)) == Merged::Maybe));
        // Of 10,000 other ids, a prefix collision (p ≈ 2,000 / 2³² each) is all but impossible.
        let maybes = (2_000..12_000)
            .filter(|&n| logged.merged(&id(n)) == Merged::Maybe)
            .count();
        assert!(maybes <= 1, "{maybes}");
        logged.add(&id(20_000));
        logged.cover(2_001);
        logged.cover(5);
        assert_eq!(logged.covered(), 2_001);
        assert_eq!(logged.merged(&id(20_000)), Merged::Maybe);
        let s = logged.summary();
        assert_eq!(s.prefixes, 2_001);
        assert!(s.bytes >= 2_001 * 5, "{s:?}");
    }

    #[test]
    fn a_short_id_blob_only_makes_it_say_maybe() {
        assert_eq!(prefix_of(&[1, 2]), 0x0102_0000);
        assert_eq!(prefix_of(&[]), 0);
        assert_eq!(prefix_of(&[1, 2, 3, 4, 5]), 0x0102_0304);
    }
}
