//! The scale run: the cost of each operation as the log grows from 10^3 to 10^6 entries —
//! proofs, retrieval, entry verification, durable writes, a whole-store `verify` — and the peak
//! memory, measured on generated stores. [`render_scale_table`](crate::render_scale_table)
//! prints it with the growth checks ([`crate::scale_checks`]), [`scale_svg`](crate::scale_svg)
//! draws it.

use crate::error::BenchError;
use crate::fixtures::{self, Workload};
use crate::generate::{self, SCOPE};
use crate::scale_writes::interleaved_writes;
use crate::stats::{Budget, measure, summarize};
use crate::store_verify::{StoreVerify, sample_entries};
use crate::sys;
use memlineage::{Memory, SqliteStore};
use memlineage_core::EntryId;
use memlineage_core::entry::Scope;
use serde::Serialize;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

/// Sizes and budgets of a scale run.
#[derive(Clone, Debug)]
pub struct ScaleOptions {
    /// Quick mode; recorded for display only.
    pub quick: bool,
    /// Seed of keys, content and workload.
    pub seed: u64,
    /// Where generated stores are cached (default [`generate::default_cache_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// Store sizes, ascending.
    pub sizes: Vec<u64>,
    /// Sampling budget of each timed operation.
    pub budget: Budget,
    /// Timed write batches (of 256) per size, after one warm-up batch; the sizes take turns,
    /// [`crate::WRITE_ROUND`] batches at a time.
    pub write_batches: usize,
    /// The embedding model for the semantic and hybrid rows, if any.
    pub embedder: Option<SharedEmbedder>,
    /// The largest size at which the semantic rows are measured (every entry is embedded
    /// once per run).
    pub semantic_max_n: u64,
}

/// An embedding model shared with the scale run.
#[derive(Clone)]
pub struct SharedEmbedder(pub std::sync::Arc<dyn memlineage::search::TextEmbedder>);

impl std::fmt::Debug for SharedEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.model_id())
    }
}

impl Default for ScaleOptions {
    fn default() -> Self {
        ScaleOptions::new(false)
    }
}

impl ScaleOptions {
    /// 10^3 … 10^6 entries (quick: up to 10^5).
    pub fn new(quick: bool) -> ScaleOptions {
        let mut sizes = vec![1_000, 10_000, 100_000];
        if !quick {
            sizes.push(1_000_000);
        }
        ScaleOptions {
            quick,
            seed: 1,
            cache_dir: None,
            sizes,
            budget: if quick {
                Budget::new(250, 30, 2_000)
            } else {
                Budget::new(1_000, 100, 10_000)
            },
            write_batches: if quick { 8 } else { 40 },
            embedder: None,
            semantic_max_n: 100_000,
        }
    }

    /// Tiny sizes, for tests of the scale run itself.
    pub fn tiny(cache_dir: PathBuf) -> ScaleOptions {
        ScaleOptions {
            quick: true,
            seed: 1,
            cache_dir: Some(cache_dir),
            sizes: vec![100, 400],
            budget: Budget::new(2, 3, 10),
            write_batches: 1,
            embedder: None,
            semantic_max_n: 0,
        }
    }
}

/// The costs at one store size (medians and p99s in ns per operation).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScalePoint {
    /// Entries in the store.
    pub n: u64,
    /// Store file size, bytes.
    pub store_bytes: u64,
    /// `Memory::write_batch` of 256, per entry: median.
    pub write_ns: f64,
    /// Same, p99 over batches.
    pub write_p99_ns: f64,
    /// Same, mean over batches: the throughput, WAL checkpoints included (a checkpoint comes
    /// every few batches, so the median is a batch without one).
    pub write_mean_ns: f64,
    /// `Memory::prove_inclusion` of a random entry: median.
    pub inclusion_ns: f64,
    /// Same, p99.
    pub inclusion_p99_ns: f64,
    /// Mean inclusion proof length, in hashes (≈ log2 n).
    pub inclusion_hashes: f64,
    /// `Memory::prove_consistency` from a random older size: median.
    pub consistency_ns: f64,
    /// Same, p99.
    pub consistency_p99_ns: f64,
    /// `Memory::search` of 8 (full-text search, verify, render): median.
    pub retrieve_8_ns: f64,
    /// Same, p99.
    pub retrieve_8_p99_ns: f64,
    /// `Memory::recall` of the same 8 by id (verify, render; no search): median.
    pub recall_8_ns: f64,
    /// The gate's earliest-carrier lookups (issue 19) for the banking call's values
    /// (`Memory::first_carriers`), per key looked up: median.
    pub earliest_per_key_ns: f64,
    /// Same, p99.
    pub earliest_per_key_p99_ns: f64,
    /// How many keys the call's values give, and how many of them the store carries.
    pub earliest_keys: (usize, usize),
    /// Signature + inclusion proof verification of one entry (proof from the store): median.
    pub entry_verify_ns: f64,
    /// Same, p99.
    pub entry_verify_p99_ns: f64,
    /// `Memory::verify` of the whole store (batch verification on all cores): entries/s.
    pub verify_store_per_second: f64,
    /// Peak RSS while measuring the operations above at this size, `verify` excluded
    /// (`VmHWM`, reset before each size), KiB.
    pub peak_rss_kib: Option<u64>,
    /// Peak RSS during the whole-store `verify` (reset before it), KiB.
    pub verify_peak_rss_kib: Option<u64>,
}

/// The result of a scale run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScaleReport {
    /// The machine, in words.
    pub machine: String,
    /// The seed.
    pub seed: u64,
    /// Whether peak RSS was reset between sizes (else it is the process peak so far).
    pub rss_reset: bool,
    /// Peak RSS while the durable writes ran (all sizes open at once, interleaved), KiB.
    pub write_peak_rss_kib: Option<u64>,
    /// One point per size, ascending.
    pub points: Vec<ScalePoint>,
    /// The retrieval rows, one per size ([`crate::scale_retrieval`]).
    pub retrieval: Vec<crate::RetrievalPoint>,
    /// The growth checks computed from the points ([`crate::scale_checks`] and
    /// [`crate::retrieval_checks`]).
    pub checks: Vec<crate::ScaleCheck>,
}

/// Runs the scale benchmark. Stores are generated (and cached) first, outside the
/// measurements; peak RSS is reset before each size where the kernel allows it.
pub fn scale(
    opts: &ScaleOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<ScaleReport, BenchError> {
    let cache = opts
        .cache_dir
        .clone()
        .unwrap_or_else(generate::default_cache_dir);
    let mut sizes = opts.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    let mut points = Vec::new();
    let mut retrieval = Vec::new();
    let mut paths = Vec::new();
    let mut rss_reset = true;
    for n in sizes {
        let g = generate::cached_store(&cache, n, opts.seed, progress)?;
        paths.push(g.path.clone());
        progress(&format!("scale: measuring at n = {n}"));
        rss_reset &= sys::reset_peak_rss();
        let mut p = measure_at(&g.path, n, opts)?;
        p.store_bytes = g.bytes;
        p.peak_rss_kib = sys::peak_rss_kib();
        progress(&format!("scale: verify of the store of {n}"));
        rss_reset &= sys::reset_peak_rss();
        p.verify_store_per_second = verify_rate(&g.path)?;
        p.verify_peak_rss_kib = sys::peak_rss_kib();
        points.push(p);
        // After the peak RSS of the other operations is taken: the in-memory indexes are
        // reported with their own memory.
        progress(&format!("scale: retrieval rows at n = {n}"));
        let embedder = opts
            .embedder
            .as_ref()
            .filter(|_| n <= opts.semantic_max_n)
            .map(|e| e.0.clone());
        retrieval.push(crate::measure_retrieval(
            &g.path,
            n,
            &opts.budget,
            embedder,
        )?);
    }
    // Durable writes at every size in turn, round after round, so that a neighbour's load on
    // the shared machine falls on all sizes alike.
    progress("scale: durable writes at every size, interleaved");
    rss_reset &= sys::reset_peak_rss();
    let writes = interleaved_writes(&paths, &cache, opts.seed, opts.write_batches)?;
    let write_peak_rss_kib = sys::peak_rss_kib();
    for (p, w) in points.iter_mut().zip(writes) {
        p.write_ns = w.median_ns;
        p.write_p99_ns = w.p99_ns;
        p.write_mean_ns = w.mean_ns;
    }
    let mut checks = crate::scale_checks(&points);
    checks.extend(crate::retrieval_checks(&retrieval));
    Ok(ScaleReport {
        machine: sys::machine(),
        seed: opts.seed,
        rss_reset,
        write_peak_rss_kib,
        points,
        retrieval,
        checks,
    })
}

/// `Memory::verify` of the store at `path`: entries per second. Fails if the audit finds a
/// problem (a generated store is valid).
fn verify_rate(path: &std::path::Path) -> Result<f64, BenchError> {
    let mem = Memory::open(SqliteStore::open(path)?)?;
    let started = Instant::now();
    let report = mem.verify(&mut |_, _| {})?;
    let secs = started.elapsed().as_secs_f64();
    if !report.ok() {
        return Err(BenchError::Core(format!(
            "verify found {} problem(s) in {}",
            report.problem_count,
            path.display()
        )));
    }
    Ok(report.entries as f64 / secs.max(1e-9))
}

/// Every read-side operation at one size (the writes are measured afterwards, interleaved).
fn measure_at(
    path: &std::path::Path,
    n: u64,
    opts: &ScaleOptions,
) -> Result<ScalePoint, BenchError> {
    let budget = &opts.budget;
    let mem = Memory::open(SqliteStore::open(path)?)?;
    let size = mem.size()?;
    let mut workload = Workload::new(opts.seed ^ n);
    let picked = sample_entries(&mem, &mut workload, 64)?;

    // Inclusion proofs.
    let mut hashes = 0usize;
    for (id, _) in &picked {
        hashes += mem.prove_inclusion(id, Some(size))?.path.len();
    }
    let mut k = 0usize;
    let incl = measure(budget, || {
        k = (k + 1) % picked.len();
        black_box(mem.prove_inclusion(&picked[k].0, Some(size)).is_ok());
    });

    // Consistency proofs.
    let olds: Vec<u64> = (0..64).map(|_| 1 + workload.below(size - 1)).collect();
    let cons = measure(budget, || {
        k = (k + 1) % olds.len();
        black_box(mem.prove_consistency(olds[k], size).is_ok());
    });

    // Retrieval and recall of 8.
    let scope = Scope::new(SCOPE).map_err(BenchError::core)?;
    let queries = fixtures::queries();
    let mut qi = 0usize;
    let retrieve = measure(budget, || {
        qi = (qi + 1) % queries.len();
        black_box(mem.search(&queries[qi], &scope, 8).is_ok());
    });
    let mut id_sets = Vec::new();
    for q in &queries {
        let ids: Vec<EntryId> = mem
            .search(q, &scope, 8)?
            .entries
            .iter()
            .map(|v| v.entry.id())
            .collect();
        if !ids.is_empty() {
            id_sets.push(ids);
        }
    }
    let recall = if id_sets.is_empty() {
        summarize(&[], 1)
    } else {
        measure(budget, || {
            qi = (qi + 1) % id_sets.len();
            black_box(mem.recall(&id_sets[qi]).is_ok());
        })
    };

    // The gate's earliest-carrier lookups for the banking call's values (issue 19).
    let (_, call, _) = fixtures::gate_scenario()?;
    let keys = memlineage_core::gate::value_keys_of_arguments(&call.arguments);
    let answers = mem.first_carriers(&keys, None, &[])?;
    let carried = keys
        .iter()
        .filter(|k| matches!(answers.earliest(k), memlineage_core::gate::Earliest::At(_)))
        .count();
    let earliest = measure(budget, || {
        black_box(mem.first_carriers(&keys, None, &[]).is_ok());
    });
    let per_key = keys.len().max(1) as f64;

    // Entry verification with proofs from the store.
    let fx = StoreVerify::new(&mem, opts.seed, &picked)?;
    let mut j = 0usize;
    let verify = measure(budget, || {
        j = j.wrapping_add(1);
        black_box(fx.check(black_box(j)));
    });
    drop(mem);

    Ok(ScalePoint {
        n,
        store_bytes: 0,
        write_ns: f64::NAN,
        write_p99_ns: f64::NAN,
        write_mean_ns: f64::NAN,
        inclusion_ns: incl.median_ns,
        inclusion_p99_ns: incl.p99_ns,
        inclusion_hashes: hashes as f64 / picked.len().max(1) as f64,
        consistency_ns: cons.median_ns,
        consistency_p99_ns: cons.p99_ns,
        retrieve_8_ns: retrieve.median_ns,
        retrieve_8_p99_ns: retrieve.p99_ns,
        recall_8_ns: recall.median_ns,
        earliest_per_key_ns: earliest.median_ns / per_key,
        earliest_per_key_p99_ns: earliest.p99_ns / per_key,
        earliest_keys: (keys.len(), carried),
        entry_verify_ns: verify.median_ns,
        entry_verify_p99_ns: verify.p99_ns,
        verify_store_per_second: 0.0,
        peak_rss_kib: None,
        verify_peak_rss_kib: None,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn point(n: u64, scale: f64) -> ScalePoint {
        ScalePoint {
            n,
            store_bytes: n * 1500,
            write_ns: 60_000.0,
            write_p99_ns: 70_000.0,
            write_mean_ns: 62_000.0,
            inclusion_ns: 2_000.0 * scale,
            inclusion_p99_ns: 3_000.0 * scale,
            inclusion_hashes: (n as f64).log2(),
            consistency_ns: 3_000.0 * scale,
            consistency_p99_ns: 4_000.0 * scale,
            retrieve_8_ns: 500_000.0,
            retrieve_8_p99_ns: 600_000.0,
            recall_8_ns: 300_000.0,
            earliest_per_key_ns: 20_000.0,
            earliest_per_key_p99_ns: 30_000.0,
            earliest_keys: (4, 1),
            entry_verify_ns: 36_000.0,
            entry_verify_p99_ns: 40_000.0,
            verify_store_per_second: 80_000.0,
            peak_rss_kib: Some(20_000),
            verify_peak_rss_kib: Some(30_000),
        }
    }

    /// A report of the given points, with their checks.
    pub(crate) fn report_of(points: Vec<ScalePoint>) -> ScaleReport {
        let checks = crate::scale_checks(&points);
        ScaleReport {
            machine: "test".into(),
            seed: 1,
            rss_reset: true,
            write_peak_rss_kib: Some(25_000),
            points,
            retrieval: Vec::new(),
            checks,
        }
    }

    #[test]
    fn tiny_scale_run() {
        let dir = tempfile::tempdir().unwrap();
        let report = scale(&ScaleOptions::tiny(dir.path().to_path_buf()), &mut |_| {}).unwrap();
        assert_eq!(report.points.len(), 2);
        let (a, b) = (&report.points[0], &report.points[1]);
        assert_eq!((a.n, b.n), (100, 400));
        assert!(b.inclusion_hashes > a.inclusion_hashes);
        for p in &report.points {
            assert!(p.write_ns > 0.0 && p.inclusion_ns > 0.0 && p.entry_verify_ns > 0.0);
            assert!(p.store_bytes > 0 && p.verify_store_per_second > 0.0);
        }
        assert_eq!(report.checks.len(), 6);
        assert_eq!(report.retrieval.len(), 2);
        assert!(
            report
                .retrieval
                .iter()
                .all(|r| r.lexical_8_ns > 0.0 && r.semantic_8_ns.is_none())
        );
        assert_eq!(report.checks[0].pass, Some(true), "{:?}", report.checks[0]);
        assert!(crate::scale_svg(&report).contains("<circle"));
    }
}
