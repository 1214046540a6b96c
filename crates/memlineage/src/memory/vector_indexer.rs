//! A vector indexer: a thread that runs the embedding model over the log for semantic and
//! hybrid search, so that neither writes nor searches wait for it (the HTTP service, the MCP
//! memory server).
//!
//! The owner attaches the model with [`VectorIndexing::Background`](crate::search::VectorIndexing::Background)
//! (`search/indexing.rs`): all-MiniLM-L6-v2 embeds tens of entries per second on a CPU where
//! the store commits thousands, so embedding inside a group commit would cut write throughput
//! a hundredfold. This thread steps the index through the log ([`Memory::index_vectors`], a
//! few entries per step, the model running without holding the index), sleeps when it has
//! caught up, and is woken by the owner after its writes ([`Wake::wake`]). Entries written
//! since its last step are found by the lexical ranking (and so by hybrid search) at once, by
//! the semantic ranking once it reaches them; [`Memory::vector_index_status`] says how far
//! behind it is. Forgotten entries leave the index before every search whatever it does.
//!
//! The index is saved in the given directory every [`SAVE_EVERY`] entries and when the
//! indexer stops, so a restart loads it instead of reading every stored vector again.

use super::Memory;
use crate::search::VectorIndexProgress;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Entries one step considers: small, so a search never waits long for the index lock the
/// step takes to merge, and shutdown never waits long for a step (~1–3 s of model time on a
/// CPU).
const STEP: u64 = 64;

/// How long the indexer sleeps when caught up and not woken (a write of another process on
/// a shared store wakes no one here).
const IDLE: Duration = Duration::from_secs(1);

/// How long it waits after a failed step before trying again.
const RETRY: Duration = Duration::from_secs(5);

/// The index is saved again after this many more entries were considered.
const SAVE_EVERY: u64 = 10_000;

#[derive(Default)]
struct Signal {
    woken: bool,
    stop: bool,
}

/// Wakes the indexer (after a commit) or stops it (at shutdown).
#[derive(Default)]
pub struct Wake {
    signal: Mutex<Signal>,
    changed: Condvar,
}

impl Wake {
    /// New entries were committed: the indexer steps now instead of after its sleep.
    pub fn wake(&self) {
        if let Ok(mut s) = self.signal.lock() {
            s.woken = true;
            self.changed.notify_one();
        }
    }

    pub(super) fn stop(&self) {
        if let Ok(mut s) = self.signal.lock() {
            s.stop = true;
            self.changed.notify_one();
        }
    }

    pub(super) fn stopped(&self) -> bool {
        self.signal.lock().map_or(true, |s| s.stop)
    }

    /// Sleeps up to `timeout`, or until woken or stopped.
    pub(super) fn sleep(&self, timeout: Duration) {
        let Ok(s) = self.signal.lock() else {
            return;
        };
        let Ok((mut s, _)) = self
            .changed
            .wait_timeout_while(s, timeout, |s| !s.woken && !s.stop)
        else {
            return;
        };
        s.woken = false;
    }
}

/// The running indexer.
pub struct VectorIndexer {
    wake: Arc<Wake>,
    thread: JoinHandle<()>,
    mem: Arc<Memory>,
    saved_in: Option<PathBuf>,
}

impl VectorIndexer {
    /// Starts the indexer on `mem` (whose model was attached with
    /// [`VectorIndexing::Background`](crate::search::VectorIndexing::Background)), saving the index in `saved_in` when given;
    /// `on_step` sees the progress after each step (a metrics gauge).
    pub fn start(
        mem: Arc<Memory>,
        saved_in: Option<PathBuf>,
        on_step: impl Fn(VectorIndexProgress) + Send + 'static,
    ) -> std::io::Result<VectorIndexer> {
        let wake = Arc::new(Wake::default());
        let thread = {
            let (mem, wake, saved_in) = (Arc::clone(&mem), Arc::clone(&wake), saved_in.clone());
            std::thread::Builder::new()
                .name("memlineage-vectors".into())
                .spawn(move || run(&mem, &wake, saved_in.as_deref(), &on_step))?
        };
        Ok(VectorIndexer {
            wake,
            thread,
            mem,
            saved_in,
        })
    }

    /// What wakes it.
    pub fn waker(&self) -> Arc<Wake> {
        Arc::clone(&self.wake)
    }

    /// Stops it after its current step and saves the index (as far as it got).
    pub fn stop(self) -> Result<(), String> {
        self.wake.stop();
        self.thread
            .join()
            .map_err(|_| "the vector indexer thread failed".to_string())?;
        if let Some(dir) = &self.saved_in {
            self.mem
                .save_vector_index(dir)
                .map_err(|e| format!("cannot save the vector index in {}: {e}", dir.display()))?;
            tracing::info!(dir = %dir.display(), "vector index saved");
        }
        Ok(())
    }
}

fn run(
    mem: &Memory,
    wake: &Wake,
    saved_in: Option<&std::path::Path>,
    on_step: &dyn Fn(VectorIndexProgress),
) {
    let mut saved_at = mem.vector_index_status().map_or(0, |s| s.considered);
    while !wake.stopped() {
        match mem.index_vectors(STEP) {
            Ok(p) => {
                on_step(p);
                if let Some(dir) = saved_in
                    && p.considered >= saved_at + SAVE_EVERY
                {
                    match mem.save_vector_index(dir) {
                        Ok(()) => saved_at = p.considered,
                        Err(e) => tracing::warn!(error = %e, "cannot save the vector index"),
                    }
                }
                if p.caught_up() {
                    wake.sleep(IDLE);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "vector index step failed; trying again");
                wake.sleep(RETRY);
            }
        }
    }
}
