//! Merging the full-text index's pending list outside the log head.
//!
//! The GIN index over the documents' terms (`search_terms`) takes new documents into its
//! *pending list* (`fastupdate`, PostgreSQL's default): an append adds each document's
//! entries there cheaply, and the list is merged into the main index in bulk — by VACUUM, by
//! `gin_clean_pending_list`, or, once the list outgrows `gin_pending_list_limit` (4 MB by
//! default), by the very insert that found it full (PostgreSQL documentation, "GIN Fast
//! Update Technique"). That insert runs inside an append, which holds the log head: one append
//! of 256 entries in about fifteen took 170 ms instead of 20 ms, and every other writer waited
//! for it (`docs/performance.md`, "PostgreSQL beside SQLite").
//!
//! So each store value merges the list itself, after its appends have committed — on a
//! connection of its own, in a background thread, holding no lock an append needs — once
//! [`MERGE_EVERY`] documents were appended through it since its last merge. The list then stays
//! well below the limit and the insert inside an append no longer finds it full. Nothing
//! changes in what is indexed or found: pending entries are searched like merged ones, and a
//! merge interrupted by a crash is redone by the next one (it is WAL-logged).
//!
//! The documents are partitioned by leaf index (schema version 4), each partition with its own
//! GIN index, so a merge goes to the partitions the documents went to — normally the newest
//! one, whose index holds fewer than `SEARCH_PARTITION` entries whatever the size of the log.
//! The same background step makes the next partition once the newest documents are past the
//! middle of theirs (`partitions.rs`).
//!
//! `gin_clean_pending_list` is allowed to the index's owner only. A writer connected as another
//! role gets `42501` once, says so in the log, and stops trying: the server then merges as
//! before (inside an append, or by autovacuum).

use super::conn::{Pool, sqlstate};
use super::partitions::{self, Partitions};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How many documents are appended through one store value between two merges: far below the
/// default limit of pending entries (about 6,000 of the benchmark's ~180-byte entries), so that
/// the list is merged here, never by an insert inside an append. A merge costs less per
/// document the more it merges, but a merge takes a core from the appends running beside it for
/// as long as it lasts, and the rare batch that runs beside a large one sets the p99: with four
/// writers offering 10,000 entries/s, merging every 768 documents gave a p99 commit of 27–36 ms
/// against 74–82 ms every 3,072, for 47–58 against 40–47 µs of server CPU per entry and the
/// same saturated throughput (`docs/performance.md`, "Open loop").
pub const MERGE_EVERY: u64 = 768;

/// The statement that merges the lists of the partitions `$1..=$2` (a partition that does not
/// exist is skipped: `to_regclass` gives NULL, and the function is strict).
const MERGE: &str = "SELECT gin_clean_pending_list(to_regclass('search_p' || k || '_terms')) \
                     FROM generate_series($1::int8, $2::int8) AS k";

/// SQLSTATE `insufficient_privilege`: the role does not own the index.
const NOT_OWNER: &str = "42501";

/// The merge state of one store value.
pub(super) struct PendingMerge {
    /// Documents appended since the last merge began.
    appended: AtomicU64,
    /// The lowest and highest leaf index of those documents (`u64::MAX` and 0 when none).
    lowest: AtomicU64,
    highest: AtomicU64,
    /// A merge is running.
    running: Arc<AtomicBool>,
    /// The role may not merge (not the index's owner): never try again.
    refused: Arc<AtomicBool>,
}

impl Default for PendingMerge {
    fn default() -> Self {
        PendingMerge {
            appended: AtomicU64::new(0),
            lowest: AtomicU64::new(u64::MAX),
            highest: AtomicU64::new(0),
            running: Arc::default(),
            refused: Arc::default(),
        }
    }
}

/// Committed documents: how many, and the lowest and highest of their leaf indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Documents {
    pub(super) count: u64,
    pub(super) lowest: u64,
    pub(super) highest: u64,
}

impl PendingMerge {
    /// Notes `documents` appended and committed; starts a merge in the background when enough
    /// were and none is running (which also makes the next partition when it is due). Returns
    /// whether it started one.
    pub(super) fn appended(
        &self,
        pool: &Arc<Pool>,
        parts: &Arc<Partitions>,
        documents: Documents,
    ) -> bool {
        if documents.count == 0 || self.refused.load(Ordering::Relaxed) {
            return false;
        }
        self.lowest.fetch_min(documents.lowest, Ordering::Relaxed);
        self.highest.fetch_max(documents.highest, Ordering::Relaxed);
        let total = self.appended.fetch_add(documents.count, Ordering::Relaxed) + documents.count;
        if total < MERGE_EVERY || self.running.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.appended.store(0, Ordering::Relaxed);
        let lowest = self.lowest.swap(u64::MAX, Ordering::Relaxed);
        let highest = self.highest.swap(0, Ordering::Relaxed);
        let (pool, parts, running, refused) = (
            Arc::clone(pool),
            Arc::clone(parts),
            Arc::clone(&self.running),
            Arc::clone(&self.refused),
        );
        let spawned = std::thread::Builder::new()
            .name("memlineage-pg-merge".into())
            .spawn(move || {
                let (from, to) = (partitions::of(lowest.min(highest)), partitions::of(highest));
                merge(&pool, &refused, from, to);
                ahead(&pool, &parts, highest);
                running.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            self.running.store(false, Ordering::Release);
            return false;
        }
        true
    }
}

/// Makes the partition after the one of leaf index `highest` when it is due and not known to
/// exist. A failure is left to the append that needs the partition (it makes it then).
fn ahead(pool: &Pool, parts: &Partitions, highest: u64) {
    let next = partitions::of(highest).saturating_add(1);
    if !partitions::next_is_due(highest) || parts.known(next) {
        return;
    }
    let outcome = pool.get().and_then(|mut conn| {
        let r = partitions::make(&mut conn, next, next);
        if r.is_err() && !conn.is_closed() {
            conn.discard();
        }
        r
    });
    match outcome {
        Ok(()) => parts.exist_upto(next),
        Err(e) => tracing::debug!("making the full-text partition {next} ahead failed: {e}"),
    }
}

/// Merges the pending lists of partitions `from..=to` once. Failures are left to the next
/// merge (a server restarting, a lost connection) or, for a role that may not merge, end the
/// merging.
fn merge(pool: &Pool, refused: &AtomicBool, from: u64, to: u64) {
    let outcome = pool.get().and_then(|mut conn| {
        let (from, to) = (super::read::to_i64(from)?, super::read::to_i64(to)?);
        let r = conn.query(MERGE, &[&from, &to]);
        if r.is_err() && !conn.is_closed() {
            // The statement ran outside a transaction block; nothing to roll back, but a
            // connection whose state is unknown is not returned.
            conn.discard();
        }
        r
    });
    if let Err(e) = outcome {
        if sqlstate(&e) == Some(NOT_OWNER) {
            refused.store(true, Ordering::Relaxed);
            tracing::warn!(
                "this role does not own the full-text index's partitions (`search_p<k>_terms`), so \
                 their pending lists are merged by PostgreSQL inside appends (slower) instead of \
                 in the background: {e}"
            );
        } else {
            tracing::debug!("merging the full-text index's pending list failed: {e}");
        }
    }
}
