//! Durable writes for the scale run: batches of 256 written with `Memory::write_batch` into a
//! scratch copy of a generated store, derived entries naming parents among the 256 most
//! recent entries (the workload's rule). The sizes take turns, [`WRITE_ROUND`] batches at a
//! time, so that load from a neighbour on a shared machine falls on every size alike.

use crate::error::BenchError;
use crate::fixtures::{OPERATOR, PRINCIPALS, Workload, name, principal_key};
use crate::generate::REGISTRY_RECORDS;
use crate::stats::{Stats, summarize};
use memlineage::{Memory, SqliteStore};
use memlineage_core::EntryId;
use std::path::Path;
use std::time::Instant;

/// Batches one size writes before the next size takes its turn.
pub const WRITE_ROUND: usize = 4;
/// Entries per batch.
const BATCH: usize = 256;

/// A scratch copy of a store, open for writing with every fixture key loaded.
pub struct DurableWriter {
    mem: Memory,
    pool: Vec<EntryId>,
    workload: Workload,
    _scratch: tempfile::TempDir,
}

impl DurableWriter {
    /// Copies the store at `path` into a scratch directory in `cache` and opens the copy.
    pub fn new(path: &Path, cache: &Path, seed: u64) -> Result<DurableWriter, BenchError> {
        let scratch = tempfile::Builder::new()
            .prefix("scratch-")
            .tempdir_in(cache)
            .map_err(|e| BenchError::io(cache, e))?;
        let copy = scratch.path().join("copy.sqlite");
        std::fs::copy(path, &copy).map_err(|e| BenchError::io(path, e))?;
        // The copy's pages are written back now, not by the first checkpoint's fsync (which
        // would otherwise pay for the whole file: ≈ 0.4 s at 10^6, in one timed batch).
        std::fs::File::open(&copy)
            .and_then(|f| f.sync_all())
            .map_err(|e| BenchError::io(&copy, e))?;
        let mem = Memory::open(SqliteStore::open(&copy)?)?;
        for n in std::iter::once(OPERATOR).chain(PRINCIPALS.iter().map(|(n, _)| *n)) {
            mem.keys().insert(&name(n)?, principal_key(seed, n));
        }
        let size = mem.size()?;
        let from = size.saturating_sub(BATCH as u64).max(REGISTRY_RECORDS);
        let pool = mem
            .log(from, size - from)?
            .into_iter()
            .map(|e| e.entry.id())
            .collect();
        Ok(DurableWriter {
            mem,
            pool,
            workload: Workload::new(seed ^ 0x77),
            _scratch: scratch,
        })
    }

    /// Writes one batch of 256; returns the nanoseconds per entry.
    pub fn batch(&mut self) -> Result<f64, BenchError> {
        let reqs: Vec<_> = (0..BATCH)
            .map(|_| self.workload.next_request(&self.pool))
            .collect::<Result<_, _>>()?;
        let t = Instant::now();
        self.mem.write_batch(reqs)?;
        Ok(t.elapsed().as_nanos() as f64 / BATCH as f64)
    }
}

/// Durable batch-256 writes into a copy of the store at `path`, made in `cache`: one warm-up
/// batch, then `batches` timed ones. Per-entry ns per batch.
pub fn write_at(path: &Path, cache: &Path, seed: u64, batches: usize) -> Result<Stats, BenchError> {
    let mut w = DurableWriter::new(path, cache, seed)?;
    w.batch()?;
    let samples = (0..batches.max(1))
        .map(|_| w.batch())
        .collect::<Result<Vec<_>, _>>()?;
    Ok(summarize(&samples, BATCH as u64))
}

/// [`write_at`] for every store in `paths`, interleaved: each store writes [`WRITE_ROUND`]
/// batches in turn until each has `batches` timed ones. Stats in the order of `paths`.
pub fn interleaved_writes(
    paths: &[std::path::PathBuf],
    cache: &Path,
    seed: u64,
    batches: usize,
) -> Result<Vec<Stats>, BenchError> {
    let mut writers = paths
        .iter()
        .map(|p| DurableWriter::new(p, cache, seed))
        .collect::<Result<Vec<_>, _>>()?;
    for w in &mut writers {
        w.batch()?;
    }
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(batches); writers.len()];
    let batches = batches.max(1);
    while samples.iter().any(|s| s.len() < batches) {
        for (w, s) in writers.iter_mut().zip(&mut samples) {
            for _ in 0..WRITE_ROUND.min(batches - s.len()) {
                s.push(w.batch()?);
            }
        }
    }
    Ok(samples.iter().map(|s| summarize(s, BATCH as u64)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::cached_store;

    #[test]
    fn interleaved_writes_time_every_store() {
        let dir = tempfile::tempdir().unwrap();
        let a = cached_store(dir.path(), 60, 2, &mut |_| {}).unwrap();
        let b = cached_store(dir.path(), 300, 2, &mut |_| {}).unwrap();
        let stats =
            interleaved_writes(&[a.path.clone(), b.path.clone()], dir.path(), 2, 5).unwrap();
        assert_eq!(stats.len(), 2);
        assert!(stats.iter().all(|s| s.samples == 5 && s.median_ns > 0.0));
        // The generated stores themselves are untouched.
        let mem = Memory::open(SqliteStore::open(&b.path).unwrap()).unwrap();
        assert_eq!(mem.size().unwrap(), 300);
        assert!(write_at(&a.path, dir.path(), 2, 1).unwrap().samples == 1);
    }
}
