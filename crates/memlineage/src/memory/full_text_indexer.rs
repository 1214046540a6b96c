//! A full-text indexer: a thread that writes the texts of new entries to the store's full-text
//! index after their commit, while the writes leave it room (the HTTP service, whose one
//! committing thread answers a whole group of requests per commit).
//!
//! [`FullTextIndexer::start`] makes the store defer its full-text indexing
//! ([`Memory::defer_full_text`]; nothing starts for a store that indexes in the append). Every
//! [`INTERVAL`] it looks at how many entries arrived: fewer than [`QUIET_ARRIVALS`] and it
//! indexes up to [`CHUNK`] pending entries (chunk after chunk while none arrive); more, and it
//! waits. Why: indexing takes the store's one write lock, so under a full load every
//! millisecond of it is a millisecond the commits wait — in the commit, FTS5's flush and merges
//! were ≈ 15–21 % of the committer's time, and run beside it as chunks of ≈ 1,000 entries every
//! 50 ms they held the lock 2–10 ms each, which the writes' p99 felt (`docs/performance.md`,
//! "Full-text indexing when the writes leave room"). Searches stay complete meanwhile: a handle
//! that ranks with the backend's full-text search indexes what is pending first, and the
//! service's handle keeps its own lexical index, which reads the log itself. What a long full
//! load leaves pending is indexed in the next quiet moment, or when the indexer stops.

use super::Memory;
use super::vector_indexer::Wake;
use crate::error::Error;
use crate::store::FullTextProgress;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the indexer looks at the arrivals.
pub const INTERVAL: Duration = Duration::from_millis(50);

/// Arrivals per [`INTERVAL`] below which the indexer indexes: 250 per 50 ms is 5,000 entries a
/// second, a quarter of what the service commits on two cores.
pub const QUIET_ARRIVALS: u64 = 250;

/// The most entries one transaction indexes: ≈ 2–5 ms of the write lock, so that a commit
/// arriving meanwhile waits little.
pub const CHUNK: usize = 512;

/// How long the thread waits after a failed step (one warning per failure, not one per turn;
/// searches index what is pending themselves meanwhile).
const RETRY: Duration = Duration::from_secs(5);

/// The running indexer.
pub struct FullTextIndexer {
    wake: Arc<Wake>,
    thread: JoinHandle<()>,
    mem: Arc<Memory>,
}

impl FullTextIndexer {
    /// Defers `mem`'s full-text indexing and starts the thread; `None` (nothing deferred or
    /// started) when the store indexes in the append. `on_step` sees each step's progress
    /// (metrics).
    pub fn start(
        mem: Arc<Memory>,
        on_step: impl Fn(FullTextProgress) + Send + 'static,
    ) -> Result<Option<FullTextIndexer>, Error> {
        if !mem.defer_full_text()? {
            return Ok(None);
        }
        let wake = Arc::new(Wake::default());
        let thread = {
            let (mem, wake) = (Arc::clone(&mem), Arc::clone(&wake));
            std::thread::Builder::new()
                .name("memlineage-full-text".into())
                .spawn(move || run(&mem, &wake, &on_step))
                .map_err(|e| {
                    Error::internal(format!("cannot start the full-text indexer thread: {e}"))
                })?
        };
        Ok(Some(FullTextIndexer { wake, thread, mem }))
    }

    /// Stops it after its current step, then indexes whatever is still pending (what the
    /// last busy stretch left), so that a store shut down cleanly has nothing pending.
    pub fn stop(self) -> Result<(), String> {
        self.wake.stop();
        self.thread
            .join()
            .map_err(|_| "the full-text indexer thread failed".to_string())?;
        self.mem
            .catch_up_full_text()
            .map_err(|e| format!("indexing the last entries' text at shutdown failed: {e}"))
    }
}

fn run(mem: &Memory, wake: &Wake, on_step: &dyn Fn(FullTextProgress)) {
    let mut last = 0;
    while !wake.stopped() {
        wake.sleep(INTERVAL);
        match turn(mem, last, on_step, &|| wake.stopped()) {
            Ok(pending) => last = pending,
            Err(e) => {
                tracing::warn!(error = %e, "full-text indexing failed; trying again");
                wake.sleep(RETRY);
            }
        }
    }
}

/// One look: indexes while fewer than [`QUIET_ARRIVALS`] entries arrived since the last one
/// (which left `last` pending); returns what is pending now.
fn turn(
    mem: &Memory,
    mut last: u64,
    on_step: &dyn Fn(FullTextProgress),
    stop: &dyn Fn() -> bool,
) -> Result<u64, Error> {
    loop {
        let pending = mem.index_full_text(0)?.pending;
        let arrived = pending.saturating_sub(last);
        if pending == 0 || !quiet(arrived) || stop() {
            on_step(FullTextProgress {
                indexed: 0,
                pending,
            });
            return Ok(pending);
        }
        let step = mem.index_full_text(CHUNK)?;
        on_step(step);
        // Chunk after chunk only while nothing at all arrives.
        if step.pending == 0 || arrived > 0 {
            return Ok(step.pending);
        }
        last = step.pending;
    }
}

/// Whether `arrived` entries in one interval leave the write lock room for indexing.
fn quiet(arrived: u64) -> bool {
    arrived < QUIET_ARRIVALS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_indexer_yields_to_a_load_above_a_quarter_of_the_service_capacity() {
        assert!(quiet(0));
        assert!(quiet(QUIET_ARRIVALS - 1));
        assert!(!quiet(QUIET_ARRIVALS));
        // 5,000 entries a second.
        assert_eq!(QUIET_ARRIVALS as f64 / INTERVAL.as_secs_f64(), 5_000.0);
    }
}
