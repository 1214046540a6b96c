//! The partitions of the full-text documents (schema version 4, `schema.rs`): a settle
//! (`memlineage_search_settle`, schema version 6) makes the partitions the documents it moves
//! fall in, and a writer makes the next partition ahead of time, in the background, so that
//! settles seldom have to.
//!
//! A store value remembers how many partitions it knows to exist ([`Partitions::known`]):
//! partitions are never dropped, so the next one is not asked for again once it was made.

use super::conn::Conn;
use super::read::to_i64;
use super::schema::SEARCH_PARTITION;
use crate::error::Error;
use std::sync::atomic::{AtomicU64, Ordering};

/// Makes the missing partitions among `from..=to` (one statement; each call takes the
/// advisory lock of `memlineage_search_partition`).
const MAKE: &str =
    "SELECT memlineage_search_partition(k) FROM generate_series($1::int8, $2::int8) AS k";

/// The partition that holds leaf index `index`.
pub(super) fn of(index: u64) -> u64 {
    index / SEARCH_PARTITION
}

/// Whether a writer whose newest document has leaf index `index` should make the next
/// partition now: once it is past the middle of its partition, well before an append needs it.
pub(super) fn next_is_due(index: u64) -> bool {
    index % SEARCH_PARTITION >= SEARCH_PARTITION / 2
}

/// What one store value knows of the partitions.
#[derive(Default)]
pub(super) struct Partitions {
    /// Partitions `0..known` exist.
    known: AtomicU64,
}

impl Partitions {
    /// Partitions `0..=partition` exist (committed).
    pub(super) fn exist_upto(&self, partition: u64) {
        self.known
            .fetch_max(partition.saturating_add(1), Ordering::AcqRel);
    }

    /// Whether partition `partition` is known to exist.
    pub(super) fn known(&self, partition: u64) -> bool {
        partition < self.known.load(Ordering::Acquire)
    }
}

/// Makes the missing partitions among `from..=to` on `conn` (in its transaction, if one is
/// open; else one of its own).
pub(super) fn make(conn: &mut Conn, from: u64, to: u64) -> Result<(), Error> {
    conn.query(MAKE, &[&to_i64(from)?, &to_i64(to)?])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_indices_fall_in_partitions_of_the_schema_size() {
        assert_eq!(of(0), 0);
        assert_eq!(of(SEARCH_PARTITION - 1), 0);
        assert_eq!(of(SEARCH_PARTITION), 1);
        assert!(!next_is_due(0));
        assert!(!next_is_due(SEARCH_PARTITION / 2 - 1));
        assert!(next_is_due(SEARCH_PARTITION / 2));
        assert!(next_is_due(SEARCH_PARTITION - 1));
        assert!(!next_is_due(SEARCH_PARTITION));
    }

    #[test]
    fn a_value_knows_the_partitions_it_saw_committed() {
        let p = Partitions::default();
        assert!(!p.known(0));
        p.exist_upto(2);
        assert!(p.known(0) && p.known(2) && !p.known(3));
        p.exist_upto(1);
        assert!(p.known(2));
    }
}
