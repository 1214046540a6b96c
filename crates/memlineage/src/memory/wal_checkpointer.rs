//! A WAL checkpointer: a thread that checkpoints the store's write-ahead log, so that no
//! commit does (the HTTP service, whose one committing thread answers a whole group of
//! requests per commit).
//!
//! [`WalCheckpointer::start`] defers the store's checkpoints ([`Memory::defer_wal_checkpoints`];
//! nothing starts for a store without a write-ahead log) and checkpoints every
//! [`BUSY_INTERVAL`] while this handle commits often, and at most every [`IDLE_INTERVAL`] while
//! it commits now and then — a checkpoint fsyncs the database file, which a store written a
//! few times a second should not pay for each write. A failed checkpoint is logged and tried
//! again at the next turn; meanwhile the store's own safety net (commits checkpoint once the
//! log is far past its usual size) keeps the log bounded.

use super::Memory;
use super::vector_indexer::Wake;
use crate::error::Error;
use crate::store::WalCheckpoint;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the thread looks at the commit count, and checkpoints while commits are many.
///
/// Short, so that each checkpoint is small: a checkpoint ends with an fsync of the database
/// file, and the pages it copied are written back then — every 200 ms that was ≈ 10,000
/// pages (40 MiB) under the service's load, whose write-back delayed the commits' own WAL
/// fsyncs on the same disk by tens of milliseconds. And the log restarts from its beginning
/// only after a checkpoint the writer runs itself (no commit can land during it), at
/// `wal_autocheckpoint` pages: that commit copies what the last run here left, which at 200 ms
/// was ≈ 2,400 pages and 35–58 ms. At 20 ms both shrink tenfold: the service's gate decisions at
/// 128 connections kept their rate and their p99 fell from 30.8 to 13.1 ms
/// (`docs/performance.md`, "Merges in slices, smaller checkpoints").
pub const BUSY_INTERVAL: Duration = Duration::from_millis(20);

/// Commits since the last checkpoint that make the next turn checkpoint: at 8 the log holds
/// at least that many transactions' pages (a group commit of the service writes tens of pages).
pub const BUSY_COMMITS: u64 = 8;

/// The longest a committed page waits for a checkpoint when commits are few.
pub const IDLE_INTERVAL: Duration = Duration::from_secs(2);

/// How long the thread waits after a failed checkpoint (one warning per failure, not one per
/// turn; the writer's safety net keeps the log bounded meanwhile).
const RETRY: Duration = Duration::from_secs(5);

/// The running checkpointer.
pub struct WalCheckpointer {
    wake: Arc<Wake>,
    thread: JoinHandle<()>,
}

impl WalCheckpointer {
    /// Defers `mem`'s checkpoints and starts the thread; `None` (nothing deferred or started)
    /// when the store has no write-ahead log. `on_checkpoint` sees each checkpoint's outcome
    /// (metrics).
    pub fn start(
        mem: Arc<Memory>,
        on_checkpoint: impl Fn(WalCheckpoint) + Send + 'static,
    ) -> Result<Option<WalCheckpointer>, Error> {
        if !mem.defer_wal_checkpoints()? {
            return Ok(None);
        }
        let wake = Arc::new(Wake::default());
        let thread = {
            let wake = Arc::clone(&wake);
            std::thread::Builder::new()
                .name("memlineage-checkpoint".into())
                .spawn(move || run(&mem, &wake, &on_checkpoint))
                .map_err(|e| Error::internal(format!("cannot start the checkpoint thread: {e}")))?
        };
        Ok(Some(WalCheckpointer { wake, thread }))
    }

    /// Stops it after its current checkpoint (SQLite checkpoints what is left when the last
    /// connection closes).
    pub fn stop(self) -> Result<(), String> {
        self.wake.stop();
        self.thread
            .join()
            .map_err(|_| "the checkpoint thread failed".to_string())
    }
}

/// Whether a turn checkpoints: `commits` since the last checkpoint, `since` its time.
fn due(commits: u64, since: Duration) -> bool {
    commits >= BUSY_COMMITS || (commits > 0 && since >= IDLE_INTERVAL)
}

fn run(mem: &Memory, wake: &Wake, on_checkpoint: &dyn Fn(WalCheckpoint)) {
    let mut seen = mem.commits().unwrap_or(0);
    let mut last = Instant::now();
    while !wake.stopped() {
        wake.sleep(BUSY_INTERVAL);
        let now = mem.commits().unwrap_or(0);
        if !due(now.saturating_sub(seen), last.elapsed()) {
            continue;
        }
        match mem.checkpoint_wal() {
            Ok(Some(done)) => on_checkpoint(done),
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "WAL checkpoint failed; trying again");
                wake.sleep(RETRY);
            }
        }
        // Commits made during a failed checkpoint are counted with the next turn's.
        seen = now;
        last = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_commits_checkpoint_at_once_few_only_after_the_idle_interval() {
        assert!(!due(0, Duration::from_secs(60)));
        assert!(due(BUSY_COMMITS, Duration::ZERO));
        assert!(!due(
            BUSY_COMMITS - 1,
            IDLE_INTERVAL - Duration::from_millis(1)
        ));
        assert!(due(1, IDLE_INTERVAL));
    }
}
