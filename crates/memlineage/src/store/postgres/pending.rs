//! Settling new full-text documents into the GIN index, and merging its pending list, outside
//! the log head.
//!
//! An append writes its documents to `search_recent`, a table without a GIN index (schema
//! version 6): inserting into a GIN index inside the append cost ~2 ms of the log head's hold
//! per batch of 256, and up to ~10 ms when a pending-list merge ran beside it. Each store value
//! *settles* them itself, after its appends committed, on a connection of its own, in a
//! background thread, holding nothing an append needs: `memlineage_search_settle` moves the
//! oldest documents of `search_recent` (every writer's, not only this value's) into the
//! partitions of `search`, making the partitions they need, in one transaction (a search sees
//! each document exactly once). It runs once [`MERGE_EVERY`] documents were appended through
//! this value since its last settle, and on open when `search_recent` holds that many (a
//! process that appends a few entries and exits leaves its settle to the next one).
//!
//! The GIN index over the settled documents' terms takes them into its *pending list*
//! (`fastupdate`, PostgreSQL's default), which is merged into the main index in bulk — by
//! VACUUM, by `gin_clean_pending_list`, or, once the list outgrows `gin_pending_list_limit`,
//! by the insert that found it full (PostgreSQL documentation, "GIN Fast Update Technique").
//! So after a settle the same thread merges the lists of the partitions it moved documents
//! into. Only settles insert into the index now, so a merge never delays an append (it used
//! to: an insert inside an append found the list full and merged it, 170 ms while every writer
//! waited; later a background merge beside an append's insert added up to ~10 ms). Nothing
//! changes in what is found: unsettled and pending documents are searched like merged ones,
//! and a settle or merge interrupted by a crash is rolled back or redone by the next one.
//!
//! The partitions are by leaf index (schema version 4), so a merge goes to the newest one,
//! whose index holds fewer than `SEARCH_PARTITION` entries whatever the size of the log. The
//! same background step makes the next partition once the newest documents are past the middle
//! of theirs (`partitions.rs`).
//!
//! `gin_clean_pending_list` is allowed to the index's owner only. A writer connected as another
//! role gets `42501` once, says so in the log, and stops merging: the server then merges inside
//! a settle's insert (still outside the log head) or in autovacuum.

use super::conn::{Pool, sqlstate};
use super::partitions::{self, Partitions};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How many documents are appended through one store value between two settles (each followed
/// by a merge): far below the default limit of pending entries (about 6,000 of the benchmark's
/// ~180-byte entries), so that the list is merged here, and `search_recent`, which searches
/// scan, stays small. A merge costs less per
/// document the more it merges, but a merge takes a core from the appends running beside it for
/// as long as it lasts, and the rare batch that runs beside a large one sets the p99: with four
/// writers offering 10,000 entries/s, merging every 768 documents gave a p99 commit of 27–36 ms
/// against 74–82 ms every 3,072, for 47–58 against 40–47 µs of server CPU per entry and the
/// same saturated throughput (`docs/performance.md`, "Open loop").
pub const MERGE_EVERY: u64 = 768;

/// The most documents one settle moves (one transaction); a settle that moved that many runs
/// again.
pub(super) const SETTLE_MOST: i32 = 8192;

/// Moves the oldest documents of `search_recent` into `search` (schema version 6).
const SETTLE: &str = "SELECT lowest, highest, moved FROM memlineage_search_settle($1)";

/// Whether `search_recent` holds at least [`MERGE_EVERY`] documents (counted no further).
const BACKLOG: &str = "SELECT count(*) FROM (SELECT 1 FROM search_recent LIMIT $1) r";

/// The statement that merges the lists of the partitions `$1..=$2` (a partition that does not
/// exist is skipped: `to_regclass` gives NULL, and the function is strict).
const MERGE: &str = "SELECT gin_clean_pending_list(to_regclass('search_p' || k || '_terms')) \
                     FROM generate_series($1::int8, $2::int8) AS k";

/// SQLSTATE `insufficient_privilege`: the role does not own the index.
const NOT_OWNER: &str = "42501";

/// The settle state of one store value.
pub(super) struct PendingMerge {
    /// Documents appended through it since its last settle began.
    appended: AtomicU64,
    /// A settle is running.
    running: Arc<AtomicBool>,
    /// The role may not merge (not the index's owner): never try again.
    refused: Arc<AtomicBool>,
}

impl Default for PendingMerge {
    fn default() -> Self {
        PendingMerge {
            appended: AtomicU64::new(0),
            running: Arc::default(),
            refused: Arc::default(),
        }
    }
}

/// Committed documents: how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Documents {
    pub(super) count: u64,
}

impl PendingMerge {
    /// Notes `documents` appended and committed; starts a settle and merge in the background
    /// when enough were and none is running (which also makes the next partition when it is
    /// due). Returns whether it started one.
    pub(super) fn appended(
        &self,
        pool: &Arc<Pool>,
        parts: &Arc<Partitions>,
        documents: Documents,
    ) -> bool {
        if documents.count == 0 {
            return false;
        }
        let total = self.appended.fetch_add(documents.count, Ordering::Relaxed) + documents.count;
        if total < MERGE_EVERY || self.running.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.appended.store(0, Ordering::Relaxed);
        let (pool, parts, running, refused) = (
            Arc::clone(pool),
            Arc::clone(parts),
            Arc::clone(&self.running),
            Arc::clone(&self.refused),
        );
        let spawned = std::thread::Builder::new()
            .name("memlineage-pg-settle".into())
            .spawn(move || {
                settle_and_merge(&pool, &parts, &refused);
                running.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            self.running.store(false, Ordering::Release);
            return false;
        }
        true
    }

    /// On open: settles and merges now (in this thread) when `search_recent` holds at least
    /// [`MERGE_EVERY`] documents — left by processes that appended fewer than that and exited.
    pub(super) fn catch_up(&self, pool: &Arc<Pool>, parts: &Arc<Partitions>) {
        let most = i64::try_from(MERGE_EVERY).unwrap_or(i64::MAX);
        let backlog = pool.get().and_then(|mut conn| {
            let rows = conn.query(BACKLOG, &[&most])?;
            let n: i64 = rows.first().map_or(Ok(0), |r| r.try_get(0))?;
            Ok(n)
        });
        match backlog {
            Ok(n) if n >= most => {
                if !self.running.swap(true, Ordering::AcqRel) {
                    settle_and_merge(pool, parts, &self.refused);
                    self.running.store(false, Ordering::Release);
                }
            }
            Ok(_) => {}
            Err(e) => tracing::debug!("counting the unsettled full-text documents failed: {e}"),
        }
    }

    /// Waits, at most `limit`, for a settle running in the background to end (a store value
    /// being dropped, often at a process's exit, lets its last settle finish rather than
    /// having it rolled back).
    pub(super) fn wait_idle(&self, limit: std::time::Duration) {
        let until = std::time::Instant::now() + limit;
        while self.running.load(Ordering::Acquire) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// Runs `f` on a pooled connection of its own. After an error the connection is dropped rather
/// than returned to the pool: its statements ran outside a transaction block, so there is
/// nothing to roll back, but its state is unknown.
fn on_conn<R>(
    pool: &Pool,
    f: impl FnOnce(&mut super::conn::Conn) -> Result<R, crate::error::Error>,
) -> Result<R, crate::error::Error> {
    pool.get().and_then(|mut conn| {
        let r = f(&mut conn);
        if r.is_err() && !conn.is_closed() {
            conn.discard();
        }
        r
    })
}

/// Settles the unsettled documents (in transactions of at most [`SETTLE_MOST`]), merges the
/// pending lists of the partitions they went to, and makes the next partition when it is due.
/// Failures are left to the next settle (a server restarting, a lost connection).
fn settle_and_merge(pool: &Pool, parts: &Partitions, refused: &AtomicBool) {
    let moved = on_conn(pool, settle);
    let (lowest, highest) = match moved {
        Ok(Some(range)) => range,
        Ok(None) => return,
        Err(e) => {
            tracing::debug!("settling the new full-text documents failed: {e}");
            return;
        }
    };
    let (from, to) = (partitions::of(lowest), partitions::of(highest));
    parts.exist_upto(to);
    if !refused.load(Ordering::Relaxed) {
        merge(pool, refused, from, to);
    }
    ahead(pool, parts, highest);
}

/// Settles until `search_recent` is empty (as this connection sees it); the lowest and highest
/// leaf index moved, `None` when nothing was.
fn settle(conn: &mut super::conn::Conn) -> Result<Option<(u64, u64)>, crate::error::Error> {
    let mut range: Option<(u64, u64)> = None;
    loop {
        let rows = conn.query(SETTLE, &[&SETTLE_MOST])?;
        let Some(row) = rows.first() else {
            return Ok(range);
        };
        let (lo, hi, moved): (Option<i64>, Option<i64>, i64) =
            (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Ok(range);
        };
        let (lo, hi) = (super::read::index_from(lo)?, super::read::index_from(hi)?);
        range = Some(range.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        if moved < i64::from(SETTLE_MOST) {
            return Ok(range);
        }
    }
}

/// Makes the partition after the one of leaf index `highest` when it is due and not known to
/// exist. A failure is left to the append that needs the partition (it makes it then).
fn ahead(pool: &Pool, parts: &Partitions, highest: u64) {
    let next = partitions::of(highest).saturating_add(1);
    if !partitions::next_is_due(highest) || parts.known(next) {
        return;
    }
    let outcome = on_conn(pool, |conn| partitions::make(conn, next, next));
    match outcome {
        Ok(()) => parts.exist_upto(next),
        Err(e) => tracing::debug!("making the full-text partition {next} ahead failed: {e}"),
    }
}

/// Merges the pending lists of partitions `from..=to` once. Failures are left to the next
/// merge (a server restarting, a lost connection) or, for a role that may not merge, end the
/// merging.
fn merge(pool: &Pool, refused: &AtomicBool, from: u64, to: u64) {
    let outcome = on_conn(pool, |conn| {
        let (from, to) = (super::read::to_i64(from)?, super::read::to_i64(to)?);
        conn.query(MERGE, &[&from, &to])
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
