//! The in-process runner behind `memlineage bench`: every row measured in this process, with
//! the raw primitives measured in the same run as baselines.

use crate::error::BenchError;
use crate::fixtures::{
    self, HotPath, Workload, fresh_memory, gate_scenario, principal_key, signed_entries, tau,
    typical_body, typical_edges,
};
use crate::generate::{self, REGISTRY_RECORDS, SCOPE};
use crate::stats::{Budget, Stats, measure, summarize};
use crate::store_verify::{StoreVerify, sample_entries};
use crate::write_path::MemWrite;
use ed25519_dalek::Signer;
use memlineage::{Memory, SqliteStore};
use memlineage_core::entry::{Scope, SignedEntry};
use memlineage_core::gate::{GateInput, PreparedContext, decide};
use memlineage_core::keys::{self, BatchItem, Domain};
use memlineage_core::label::{Fallback, TrustClass, TrustLabel, Weight};
use memlineage_core::trust::{ParentEdge, compute_label};
use memlineage_core::{EntryId, Hash256};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::hint::black_box;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// Row names, in the order [`run`] returns them. Stable: documented in `docs/performance.md`.
pub const ROW_NAMES: [&str; 25] = [
    "raw_sign",
    "raw_verify",
    "raw_sha256_node",
    "raw_fdatasync",
    "encode_body",
    "decode_leaf_strict",
    "write_hot_path_mem",
    "write_core_path",
    "durable_append_b1",
    "durable_append_b16",
    "durable_append_b256",
    "entry_verify",
    "batch_verify_64",
    "label_propagation",
    "gate_decision",
    "gate_prepare_context",
    "gate_decision_prepared",
    "gate_decision_earliest",
    "retrieve_verify_render_8",
    "retrieve_cold_8",
    "recall_verify_render_8",
    "retrieve_held_checkpoint_8",
    "inclusion_proof_gen",
    "consistency_proof_gen",
    "verify_store",
];

/// Paper figures (nanoseconds): write 214 µs, verify 81 µs, label 1.0 µs, gate 0.7 µs,
/// filter+tag of 8 entries 717.8 µs.
pub const PAPER_WRITE_NS: f64 = 214_000.0;
/// Paper: verification of one entry.
pub const PAPER_VERIFY_NS: f64 = 81_000.0;
/// Paper: label propagation.
pub const PAPER_LABEL_NS: f64 = 1_000.0;
/// Paper: one gate decision.
pub const PAPER_GATE_NS: f64 = 700.0;
/// Paper: filter and tag of 8 retrieved entries.
pub const PAPER_RETRIEVE_8_NS: f64 = 717_800.0;

/// One row of the table (and of `memlineage bench --json`).
///
/// JSON keys: `name`, `median_ns`, `p99_ns`, `baseline`, `ratio`, `paper_ns` always (null when
/// not applicable); `per_second` on throughput rows only; `reference` and `reference_ratio`
/// where a second primitive is shown (the durable rows: one fdatasync); then `target`,
/// `meets_target`, `samples`, `iters_per_sample`, and `n` and `note` where they apply.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchRow {
    /// The stable row name.
    pub name: String,
    /// Median, ns per operation (durable rows: per batch commit; `verify_store`: per entry).
    pub median_ns: f64,
    /// 99th percentile, same unit as `median_ns`.
    pub p99_ns: f64,
    /// The raw primitive row this row is compared to.
    pub baseline: Option<String>,
    /// This row's per-operation (per-entry for throughput rows) median over the baseline's.
    pub ratio: Option<f64>,
    /// The paper's figure for this operation, in ns.
    pub paper_ns: Option<f64>,
    /// Entries per second (throughput rows only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_second: Option<f64>,
    /// A second raw primitive shown beside the row (durable rows: `raw_fdatasync`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// This row's median over the reference's median (durable rows: one batch commit in
    /// fdatasyncs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_ratio: Option<f64>,
    /// The target, in words.
    pub target: Option<String>,
    /// Whether the target is met.
    pub meets_target: Option<bool>,
    /// Number of samples behind the median and p99.
    pub samples: usize,
    /// Operations per sample (sub-5 µs operations are timed in groups).
    pub iters_per_sample: u64,
    /// The store or tree size the row was measured at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<u64>,
    /// What exactly was measured, or what went wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Sizes and budgets of a run.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Quick mode (smaller stores, shorter budgets); recorded for display only.
    pub quick: bool,
    /// Seed of keys, content and workload.
    pub seed: u64,
    /// Where generated stores are cached (default [`generate::default_cache_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// Entries of the store behind `entry_verify`, `inclusion_proof_gen` and
    /// `consistency_proof_gen` (10^6; quick 10^5).
    pub proof_store_entries: u64,
    /// Entries of the store `verify_store` audits.
    pub verify_store_entries: u64,
    /// Entries of the store the retrieval rows search.
    pub retrieve_store_entries: u64,
    /// Sampling budget of each row timed with [`measure`].
    pub row_budget: Budget,
    /// Timed batches of the durable rows, for batch sizes 1, 16 and 256.
    pub durable_batches: [usize; 3],
    /// Rows to run (names from [`ROW_NAMES`]); empty: all of them.
    pub only: Vec<String>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions::new(false)
    }
}

impl BenchOptions {
    /// The full run (`quick = false`: stores of 10^6 entries, about 2 s per row) or the quick
    /// one (10^5 entries, about 0.3 s per row).
    pub fn new(quick: bool) -> BenchOptions {
        if quick {
            BenchOptions {
                quick,
                seed: 1,
                cache_dir: None,
                proof_store_entries: 100_000,
                verify_store_entries: 100_000,
                retrieve_store_entries: 4096,
                row_budget: Budget::new(300, 30, 5_000),
                durable_batches: [150, 60, 12],
                only: Vec::new(),
            }
        } else {
            BenchOptions {
                quick,
                seed: 1,
                cache_dir: None,
                proof_store_entries: 1_000_000,
                verify_store_entries: 1_000_000,
                retrieve_store_entries: 4096,
                row_budget: Budget::new(2_000, 100, 50_000),
                durable_batches: [1_000, 300, 60],
                only: Vec::new(),
            }
        }
    }

    /// Tiny sizes and budgets, for tests of the runner itself (the numbers mean nothing).
    pub fn tiny(cache_dir: PathBuf) -> BenchOptions {
        BenchOptions {
            quick: true,
            seed: 1,
            cache_dir: Some(cache_dir),
            proof_store_entries: 300,
            verify_store_entries: 300,
            retrieve_store_entries: 300,
            row_budget: Budget::new(2, 3, 10),
            durable_batches: [3, 2, 1],
            only: Vec::new(),
        }
    }

    fn cache(&self) -> PathBuf {
        self.cache_dir
            .clone()
            .unwrap_or_else(generate::default_cache_dir)
    }
}

/// A target a row is checked against.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// ratio ≤ x.
    Ratio(f64),
    /// median ≤ x ns.
    MaxNs(f64),
    /// per second ≥ x.
    PerSecond(f64),
    /// per second ≥ x and p99 ≤ y ns.
    PerSecondP99(f64, f64),
}

impl Target {
    fn describe(self) -> String {
        match self {
            Target::Ratio(x) => format!("ratio ≤ {x}"),
            Target::MaxNs(x) => format!("≤ {}", crate::table::fmt_ns(x)),
            Target::PerSecond(x) => format!("≥ {x:.0}/s"),
            Target::PerSecondP99(x, y) => {
                format!("≥ {x:.0}/s, p99 ≤ {}", crate::table::fmt_ns(y))
            }
        }
    }

    fn met(self, row: &BenchRow) -> Option<bool> {
        match self {
            Target::Ratio(x) => row.ratio.map(|r| r <= x),
            Target::MaxNs(x) => Some(row.median_ns <= x),
            Target::PerSecond(x) => row.per_second.map(|p| p >= x),
            Target::PerSecondP99(x, y) => row.per_second.map(|p| p >= x && row.p99_ns <= y),
        }
    }
}

/// Collects rows; fills ratios from baseline rows measured earlier in the same run.
struct Rows {
    rows: Vec<BenchRow>,
    only: Vec<String>,
}

struct RowSpec {
    name: &'static str,
    baseline: Option<&'static str>,
    reference: Option<&'static str>,
    paper_ns: Option<f64>,
    target: Option<Target>,
}

const fn spec(name: &'static str) -> RowSpec {
    RowSpec {
        name,
        baseline: None,
        reference: None,
        paper_ns: None,
        target: None,
    }
}

impl RowSpec {
    const fn base(mut self, b: &'static str) -> Self {
        self.baseline = Some(b);
        self
    }
    const fn reference(mut self, r: &'static str) -> Self {
        self.reference = Some(r);
        self
    }
    const fn paper(mut self, ns: f64) -> Self {
        self.paper_ns = Some(ns);
        self
    }
    const fn target(mut self, t: Target) -> Self {
        self.target = Some(t);
        self
    }
}

impl Rows {
    fn wants(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|n| n == name)
    }

    fn median_of(&self, name: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.median_ns)
    }

    /// Adds a row. `per_op_ns` is what the ratio compares (the median, or the per-entry cost
    /// of a throughput row).
    fn push(
        &mut self,
        spec: RowSpec,
        stats: Stats,
        per_second: Option<f64>,
        n: Option<u64>,
        note: Option<String>,
    ) -> &BenchRow {
        let per_op = per_second.map_or(stats.median_ns, |p| 1e9 / p);
        let ratio = spec
            .baseline
            .and_then(|b| self.median_of(b))
            .filter(|b| *b > 0.0)
            .map(|b| per_op / b);
        let reference_ratio = spec
            .reference
            .and_then(|r| self.median_of(r))
            .filter(|r| *r > 0.0)
            .map(|r| stats.median_ns / r);
        let mut row = BenchRow {
            name: spec.name.to_string(),
            median_ns: stats.median_ns,
            p99_ns: stats.p99_ns,
            baseline: spec.baseline.map(str::to_string),
            ratio,
            paper_ns: spec.paper_ns,
            per_second,
            reference: spec.reference.map(str::to_string),
            reference_ratio,
            target: spec.target.map(Target::describe),
            meets_target: None,
            samples: stats.samples,
            iters_per_sample: stats.iters_per_sample,
            n,
            note,
        };
        row.meets_target = spec.target.and_then(|t| t.met(&row));
        self.rows.push(row);
        let last = self.rows.len() - 1;
        &self.rows[last]
    }
}

fn scratch_dir(opts: &BenchOptions) -> Result<tempfile::TempDir, BenchError> {
    let cache = opts.cache();
    std::fs::create_dir_all(&cache).map_err(|e| BenchError::io(&cache, e))?;
    tempfile::Builder::new()
        .prefix("scratch-")
        .tempdir_in(&cache)
        .map_err(|e| BenchError::io(&cache, e))
}

/// What every row step needs.
struct Ctx<'a> {
    opts: &'a BenchOptions,
    budget: Budget,
    seed: u64,
    agent: ed25519_dalek::SigningKey,
    body: memlineage_core::entry::EntryBody,
    body_bytes: Vec<u8>,
    msg: Vec<u8>,
}

impl Ctx<'_> {
    fn msg_note(&self) -> String {
        format!(
            "{}-byte message (domain prefix + typical body)",
            self.msg.len()
        )
    }
}

type Step = fn(&Ctx<'_>, &mut Rows, &mut dyn FnMut(&str)) -> Result<(), BenchError>;

/// The steps of a run, each producing the rows it names.
const STEPS: [(&[&str], Step); 17] = [
    (&["raw_sign"], step_raw_sign),
    (&["raw_verify"], step_raw_verify),
    (&["raw_sha256_node"], step_raw_sha256_node),
    (&["raw_fdatasync"], step_raw_fdatasync),
    (&["encode_body"], step_encode_body),
    (&["decode_leaf_strict"], step_decode_leaf),
    (&["write_hot_path_mem"], step_write_hot_path),
    (&["write_core_path"], step_write_core_path),
    (
        &[
            "durable_append_b1",
            "durable_append_b16",
            "durable_append_b256",
        ],
        step_durable,
    ),
    (&["entry_verify"], step_entry_verify),
    (&["batch_verify_64"], step_batch_verify),
    (&["label_propagation"], step_label),
    (
        &[
            "gate_decision",
            "gate_prepare_context",
            "gate_decision_prepared",
            "gate_decision_earliest",
        ],
        step_gate,
    ),
    (
        &[
            "retrieve_verify_render_8",
            "retrieve_cold_8",
            "recall_verify_render_8",
            "retrieve_held_checkpoint_8",
        ],
        retrieval_rows,
    ),
    (&["inclusion_proof_gen"], step_inclusion),
    (&["consistency_proof_gen"], step_consistency),
    (&["verify_store"], verify_store_row),
];

/// Runs the rows in this process and returns them in [`ROW_NAMES`] order (all of them, or
/// those [`BenchOptions::only`] names; a ratio needs its baseline row in the same run).
/// `progress` receives each row's name before it is measured, and lines while stores are
/// generated.
pub fn run(
    opts: &BenchOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<BenchRow>, BenchError> {
    if let Some(unknown) = opts.only.iter().find(|n| !ROW_NAMES.contains(&n.as_str())) {
        return Err(BenchError::Invalid(format!(
            "unknown row `{unknown}` (rows: {})",
            ROW_NAMES.join(", ")
        )));
    }
    let seed = opts.seed;
    let agent = principal_key(seed, "agent");
    let body = typical_body(seed, 0);
    let body_bytes = body.canonical_bytes();
    let msg = Domain::EntryV1.message(&body_bytes);
    let cx = Ctx {
        opts,
        budget: opts.row_budget,
        seed,
        agent,
        body,
        body_bytes,
        msg,
    };
    let mut rows = Rows {
        rows: Vec::new(),
        only: opts.only.clone(),
    };
    for (names, step) in STEPS {
        if names.iter().any(|n| rows.wants(n)) {
            step(&cx, &mut rows, progress)?;
        }
    }
    Ok(rows.rows)
}

fn step_raw_sign(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("raw_sign");
    let s = measure(&cx.budget, || {
        black_box(cx.agent.sign(black_box(&cx.msg)));
    });
    rows.push(spec("raw_sign"), s, None, None, Some(cx.msg_note()));
    Ok(())
}

fn step_raw_verify(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("raw_verify");
    let pk = cx.agent.verifying_key();
    let sig = cx.agent.sign(&cx.msg);
    let s = measure(&cx.budget, || {
        black_box(pk.verify_strict(black_box(&cx.msg), &sig).is_ok());
    });
    rows.push(
        spec("raw_verify"),
        s,
        None,
        None,
        Some(format!("verify_strict, {}", cx.msg_note())),
    );
    Ok(())
}

fn step_raw_sha256_node(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("raw_sha256_node");
    let (l, r) = (Hash256::of(b"left"), Hash256::of(b"right"));
    let s = measure(&cx.budget, || {
        let mut h = Sha256::new();
        h.update([1u8]);
        h.update(black_box(l.0));
        h.update(black_box(r.0));
        black_box(h.finalize());
    });
    rows.push(spec("raw_sha256_node"), s, None, None, None);
    Ok(())
}

fn step_raw_fdatasync(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("raw_fdatasync");
    let scratch = scratch_dir(cx.opts)?;
    let s = fdatasync_stats(&scratch, &cx.budget)?;
    rows.push(
        spec("raw_fdatasync"),
        s,
        None,
        None,
        Some("append 256 bytes to a file and fdatasync it, in the store cache directory".into()),
    );
    Ok(())
}

fn step_encode_body(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("encode_body");
    let s = measure(&cx.budget, || {
        black_box(black_box(&cx.body).canonical_bytes());
    });
    rows.push(
        spec("encode_body"),
        s,
        None,
        None,
        Some(format!("{}-byte canonical body", cx.body_bytes.len())),
    );
    Ok(())
}

fn step_decode_leaf(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("decode_leaf_strict");
    let leaf = SignedEntry::sign(cx.body.clone(), &cx.agent)
        .map_err(BenchError::core)?
        .to_leaf();
    let s = measure(&cx.budget, || {
        black_box(SignedEntry::from_leaf(black_box(&leaf)).is_ok());
    });
    rows.push(
        spec("decode_leaf_strict"),
        s,
        None,
        None,
        Some(format!("{}-byte leaf", leaf.len())),
    );
    Ok(())
}

fn step_write_hot_path(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("write_hot_path_mem");
    let mut w = MemWrite::new(cx.seed)?;
    let mut failed = None;
    let s = measure(&cx.budget, || {
        if let Err(e) = w.write_one() {
            failed = Some(e);
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let n = w.memory().size()?;
    rows.push(
        spec("write_hot_path_mem")
            .base("raw_sign")
            .paper(PAPER_WRITE_NS)
            .target(Target::Ratio(1.3)),
        s,
        None,
        Some(n),
        Some(
            "Memory::write on the in-memory store (MemoryStore) of a derived entry with 2 parents: key and registry checks, parents' labels from the store, label, content hash, encode, sign, guarded append (leaf, Merkle nodes, edge/writer/search indexes); n = entries at the end"
                .into(),
        ),
    );
    Ok(())
}

fn step_write_core_path(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("write_core_path");
    let mut path = HotPath::new(cx.seed)?;
    let mut failed = false;
    let s = measure(&cx.budget, || {
        failed |= path.write_one().is_err();
    });
    if failed {
        return Err(BenchError::Core("signing failed in write_core_path".into()));
    }
    rows.push(
        spec("write_core_path").base("raw_sign"),
        s,
        None,
        None,
        Some(
            "the core steps alone, no store: build body, content hash, label over 2 parents (labels given), encode, sign, leaf, MemoryTree append"
                .into(),
        ),
    );
    Ok(())
}

fn step_durable(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    let scratch = scratch_dir(cx.opts)?;
    for (i, b) in [1usize, 16, 256].into_iter().enumerate() {
        let name = [
            "durable_append_b1",
            "durable_append_b16",
            "durable_append_b256",
        ][i];
        if !rows.wants(name) {
            continue;
        }
        progress(name);
        let (s, per_second) = durable(cx.opts, &scratch, b, cx.opts.durable_batches[i])?;
        let mut sp = spec(name).base("raw_sign").reference("raw_fdatasync");
        if b == 256 {
            sp = sp.target(Target::PerSecondP99(30_000.0, 20e6));
        }
        rows.push(
            sp,
            s,
            Some(per_second),
            None,
            Some(format!(
                "Memory::write_batch of {b} to a file store; median/p99 per batch commit; ratio per entry over raw_sign; reference ratio per commit over one raw_fdatasync"
            )),
        );
    }
    Ok(())
}

fn step_entry_verify(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("entry_verify");
    let (mem, size, mut workload) = proof_store(cx, progress)?;
    let picked = sample_entries(&mem, &mut workload, 64)?;
    let fx = StoreVerify::new(&mem, cx.seed, &picked)?;
    drop(mem);
    let mut j = 0usize;
    let s = measure(&cx.budget, || {
        j = j.wrapping_add(1);
        black_box(fx.check(black_box(j)));
    });
    rows.push(
        spec("entry_verify")
            .base("raw_verify")
            .paper(PAPER_VERIFY_NS)
            .target(Target::Ratio(1.2)),
        s,
        None,
        Some(size),
        Some(format!(
            "one of 64 entries of the generated store: leaf hash, inclusion proof ({:.1} hashes, from Memory::prove_inclusion) against the root, signature (key id + verify_strict)",
            fx.mean_path_len()
        )),
    );
    Ok(())
}

fn step_batch_verify(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("batch_verify_64");
    let (entries, pk) = signed_entries(cx.seed, 64)?;
    let items: Vec<BatchItem<'_>> = entries
        .iter()
        .map(|e| BatchItem {
            key: &pk,
            bytes: e.body_bytes(),
            signature: e.signature(),
        })
        .collect();
    let s = measure(&cx.budget, || {
        black_box(keys::verify_batch(Domain::EntryV1, black_box(&items)).is_ok());
    });
    let per_entry = Stats {
        median_ns: s.median_ns / 64.0,
        p99_ns: s.p99_ns / 64.0,
        mean_ns: s.mean_ns / 64.0,
        ..s
    };
    rows.push(
        spec("batch_verify_64")
            .base("raw_verify")
            .target(Target::Ratio(0.6)),
        per_entry,
        None,
        None,
        Some("keys::verify_batch of 64 entries, per entry".into()),
    );
    Ok(())
}

fn step_label(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("label_propagation");
    let edges = [
        typical_edges()[0],
        typical_edges()[1],
        ParentEdge {
            label: TrustLabel::DerivedTrusted,
            weight: Weight::from_bp(6000).unwrap_or(Weight::ONE),
        },
    ];
    let s = measure(&cx.budget, || {
        black_box(compute_label(
            TrustClass::Trusted,
            black_box(&edges),
            tau(),
            Fallback::Strict,
        ));
    });
    rows.push(
        spec("label_propagation")
            .paper(PAPER_LABEL_NS)
            .target(Target::MaxNs(1_000.0)),
        s,
        None,
        None,
        Some("trust::compute_label with 3 parents".into()),
    );
    Ok(())
}

fn step_gate(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("gate_decision");
    let (policy, call, ctx) = gate_scenario()?;
    let input = GateInput::new(&call, &ctx, tau());
    let outcome = decide(&policy, &input).map_err(BenchError::core)?;
    let s = measure(&cx.budget, || {
        black_box(decide(black_box(&policy), black_box(&input)).is_ok());
    });
    rows.push(
        spec("gate_decision").paper(PAPER_GATE_NS),
        s,
        None,
        None,
        Some(format!(
            "banking policy, send_money with 4 checked parameters, 8 context entries of ~300 bytes, values found by scanning the text: {}",
            outcome.decision.as_str()
        )),
    );
    progress("gate_prepare_context");
    let s = measure(&cx.budget, || {
        black_box(PreparedContext::new(black_box(&ctx)));
    });
    rows.push(
        spec("gate_prepare_context"),
        s,
        None,
        None,
        Some("PreparedContext::new of the 8 entries: every typed value extracted once".into()),
    );
    progress("gate_decision_prepared");
    let prepared = PreparedContext::new(&ctx);
    let input = input.with_prepared(&prepared);
    let again = decide(&policy, &input).map_err(BenchError::core)?;
    if again != outcome {
        return Err(BenchError::Invalid(
            "the decision over the prepared context differs".into(),
        ));
    }
    let s = measure(&cx.budget, || {
        black_box(decide(black_box(&policy), black_box(&input)).is_ok());
    });
    rows.push(
        spec("gate_decision_prepared")
            .paper(PAPER_GATE_NS)
            .target(Target::MaxNs(1_000.0)),
        s,
        None,
        None,
        Some(format!(
            "the same decision over the prepared context (values looked up): {}",
            again.decision.as_str()
        )),
    );
    progress("gate_decision_earliest");
    // The store's answers on where the call's values first appeared (issue 19): the pure
    // part of the earliest-carrier rule (the keys hashed, the answers compared), without the
    // store lookups, which the scale run measures (`earliest/key`).
    let keys = memlineage_core::gate::value_keys_of_arguments(&call.arguments);
    let mut firsts = memlineage_core::gate::FirstCarriers::new();
    for k in &keys {
        firsts.insert(*k, None);
    }
    let input = input.with_first_carriers(&firsts);
    let third = decide(&policy, &input).map_err(BenchError::core)?;
    if third != outcome {
        return Err(BenchError::Invalid(
            "the decision with the store's answers differs".into(),
        ));
    }
    let s = measure(&cx.budget, || {
        black_box(decide(black_box(&policy), black_box(&input)).is_ok());
    });
    rows.push(
        spec("gate_decision_earliest")
            .paper(PAPER_GATE_NS)
            .target(Target::MaxNs(1_000.0)),
        s,
        None,
        None,
        Some(format!(
            "gate_decision_prepared with the value index's answers for the call's {} keys (none carried earlier): {}",
            keys.len(),
            third.decision.as_str()
        )),
    );
    Ok(())
}

fn fdatasync_stats(scratch: &tempfile::TempDir, budget: &Budget) -> Result<Stats, BenchError> {
    let path = scratch.path().join("fdatasync.bin");
    let mut file = std::fs::File::create(&path).map_err(|e| BenchError::io(&path, e))?;
    let block = [0x5au8; 256];
    let mut failed = None;
    let s = measure(budget, || {
        if let Err(e) = file.write_all(&block).and_then(|()| file.sync_data()) {
            failed = Some(e);
        }
    });
    match failed {
        Some(e) => Err(BenchError::io(&path, e)),
        None => Ok(s),
    }
}

/// Durable appends of batches of `b`: per-batch latency stats and entries per second.
fn durable(
    opts: &BenchOptions,
    scratch: &tempfile::TempDir,
    b: usize,
    batches: usize,
) -> Result<(Stats, f64), BenchError> {
    let path = scratch.path().join(format!("durable-b{b}.sqlite"));
    let (mem, pool, mut workload) = fresh_memory(&path, opts.seed, 256)?;
    let warmup = if b == 1 { 20 } else { 2 };
    let mut samples = Vec::with_capacity(batches);
    let mut total_ns = 0.0;
    for i in 0..warmup + batches.max(1) {
        let reqs: Vec<_> = (0..b)
            .map(|_| workload.next_request(&pool))
            .collect::<Result<_, _>>()?;
        let t = Instant::now();
        mem.write_batch(reqs)?;
        let ns = t.elapsed().as_nanos() as f64;
        if i >= warmup {
            samples.push(ns);
            total_ns += ns;
        }
    }
    let per_second = (samples.len() * b) as f64 / (total_ns / 1e9);
    Ok((summarize(&samples, 1), per_second))
}

/// Opens a cached generated store of `n` entries.
pub(crate) fn open_cached(
    cache: &std::path::Path,
    n: u64,
    seed: u64,
    progress: &mut dyn FnMut(&str),
) -> Result<Memory, BenchError> {
    let g = generate::cached_store(cache, n, seed, progress)?;
    if !g.reused {
        progress(&format!(
            "generated {} entries in {:.1} s ({:.0} MB) at {}",
            g.entries,
            g.seconds,
            g.bytes as f64 / 1e6,
            g.path.display()
        ));
    }
    Ok(Memory::open(SqliteStore::open(&g.path)?)?)
}

fn retrieval_rows(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    let opts = cx.opts;
    progress("retrieve_verify_render_8");
    let n = opts.retrieve_store_entries;
    let mem = open_cached(&opts.cache(), n, opts.seed, progress)?;
    let scope = Scope::new(SCOPE).map_err(BenchError::core)?;
    let queries = fixtures::queries();
    let mut returned = Vec::new();
    for q in &queries {
        returned.push(mem.search(q, &scope, 8)?);
    }
    let fewest = returned.iter().map(|r| r.entries.len()).min().unwrap_or(0);
    let dropped: usize = returned.iter().map(|r| r.dropped.len()).sum();
    let mut qi = 0usize;
    if rows.wants("retrieve_verify_render_8") {
        let s = measure(&opts.row_budget, || {
            qi = (qi + 1) % queries.len();
            black_box(mem.search(&queries[qi], &scope, 8).is_ok());
        });
        rows.push(
        spec("retrieve_verify_render_8")
            .paper(PAPER_RETRIEVE_8_NS)
            .target(Target::MaxNs(200_000.0)),
        s,
        None,
        Some(n),
        Some(format!(
            "Memory::search (FTS5 BM25, 2-word queries) of 8 by a handle as an agent holds it: decode, content hash, signer, inclusion in the signed checkpoint, label, batch signature check (signatures, inclusions and parents' signed labels it verified before are remembered: memory/verified_cache.rs), render; fewest returned {fewest}, dropped {dropped}"
        )),
    );
    }
    if rows.wants("retrieve_cold_8") {
        progress("retrieve_cold_8");
        let cold = open_cached(&opts.cache(), n, opts.seed, progress)?.with_verified_cache(0);
        let mut qi = 0usize;
        let s = measure(&opts.row_budget, || {
            qi = (qi + 1) % queries.len();
            black_box(cold.search(&queries[qi], &scope, 8).is_ok());
        });
        rows.push(
            spec("retrieve_cold_8").paper(PAPER_RETRIEVE_8_NS),
            s,
            None,
            Some(n),
            Some("retrieve_verify_render_8 by a handle that remembers nothing it verified (Memory::with_verified_cache(0)): every signature, proof and parent label from the store, as for entries a handle has never seen".into()),
        );
    }
    if rows.wants("recall_verify_render_8") {
        recall_row(opts, rows, &mem, &returned, progress)?;
    }
    if rows.wants("retrieve_held_checkpoint_8") {
        progress("retrieve_held_checkpoint_8");
        // A reader holding the store's checkpoint (issue 12): every search first proves that
        // the store extends it (`memory/reader.rs`).
        let note = mem
            .latest_checkpoint_note()?
            .ok_or_else(|| BenchError::Invalid("the generated store has no checkpoint".into()))?;
        let reader = open_cached(&opts.cache(), n, opts.seed, progress)?.with_reader(
            memlineage::transparency::ReaderTrust {
                checkpoint: Some(memlineage::transparency::TrustedCheckpoint::Note(note)),
                witnesses: None,
            },
        )?;
        let mut qi = 0usize;
        let s = measure(&opts.row_budget, || {
            qi = (qi + 1) % queries.len();
            black_box(reader.search(&queries[qi], &scope, 8).is_ok());
        });
        rows.push(
            spec("retrieve_held_checkpoint_8"),
            s,
            None,
            Some(n),
            Some("retrieve_verify_render_8 by a reader holding a checkpoint: plus the consistency proofs from it to the store's tree and to the anchor".into()),
        );
    }
    Ok(())
}

/// `recall_verify_render_8`: the entries the searches returned, recalled by id.
fn recall_row(
    opts: &BenchOptions,
    rows: &mut Rows,
    mem: &Memory,
    returned: &[memlineage::memory::Retrieval],
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    let n = opts.retrieve_store_entries;
    progress("recall_verify_render_8");
    let id_sets: Vec<Vec<EntryId>> = returned
        .iter()
        .map(|r| r.entries.iter().map(|v| v.entry.id()).collect())
        .filter(|ids: &Vec<EntryId>| !ids.is_empty())
        .collect();
    if id_sets.is_empty() {
        return Err(BenchError::Invalid(
            "no retrieval query returned anything: the store is too small".into(),
        ));
    }
    let mut qi = 0usize;
    let s = measure(&opts.row_budget, || {
        qi = (qi + 1) % id_sets.len();
        black_box(mem.recall(&id_sets[qi]).is_ok());
    });
    rows.push(
        spec("recall_verify_render_8"),
        s,
        None,
        Some(n),
        Some("Memory::recall of the same entries by id (no full-text search)".into()),
    );
    Ok(())
}

fn proof_store(
    cx: &Ctx<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<(Memory, u64, Workload), BenchError> {
    let mem = open_cached(
        &cx.opts.cache(),
        cx.opts.proof_store_entries,
        cx.seed,
        progress,
    )?;
    let size = mem.size()?;
    Ok((mem, size, Workload::new(cx.seed ^ 0xabc)))
}

fn step_inclusion(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("inclusion_proof_gen");
    let (mem, size, mut workload) = proof_store(cx, progress)?;
    let mut ids = Vec::with_capacity(256);
    for _ in 0..256 {
        let idx = REGISTRY_RECORDS + workload.below(size - REGISTRY_RECORDS);
        let stored = mem
            .log(idx, 1)?
            .pop()
            .ok_or_else(|| BenchError::Invalid(format!("entry {idx} is missing")))?;
        ids.push(stored.entry.id());
    }
    let mut k = 0usize;
    let s = measure(&cx.budget, || {
        k = (k + 1) % ids.len();
        black_box(mem.prove_inclusion(&ids[k], Some(size)).is_ok());
    });
    rows.push(
        spec("inclusion_proof_gen").target(Target::MaxNs(50_000.0)),
        s,
        None,
        Some(size),
        Some("Memory::prove_inclusion of a random entry: id lookup, O(log n) node reads, root, self-check".into()),
    );
    Ok(())
}

fn step_consistency(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    progress("consistency_proof_gen");
    let (mem, size, mut workload) = proof_store(cx, progress)?;
    let olds: Vec<u64> = (0..256).map(|_| 1 + workload.below(size - 1)).collect();
    let mut k = 0usize;
    let s = measure(&cx.budget, || {
        k = (k + 1) % olds.len();
        black_box(mem.prove_consistency(olds[k], size).is_ok());
    });
    rows.push(
        spec("consistency_proof_gen").target(Target::MaxNs(50_000.0)),
        s,
        None,
        Some(size),
        Some("Memory::prove_consistency from a random older size to the current one: node reads, both roots, self-check".into()),
    );
    Ok(())
}

fn verify_store_row(
    cx: &Ctx<'_>,
    rows: &mut Rows,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    let opts = cx.opts;
    progress("verify_store");
    let n = opts.verify_store_entries;
    let mem = open_cached(&opts.cache(), n, opts.seed, progress)?;
    let mut samples = Vec::new();
    let mut last = (Instant::now(), 0u64);
    let started = Instant::now();
    let report = mem.verify(&mut |done, _total| {
        let ns = last.0.elapsed().as_nanos() as f64;
        if done > last.1 {
            samples.push(ns / (done - last.1) as f64);
        }
        last = (Instant::now(), done);
    })?;
    let secs = started.elapsed().as_secs_f64();
    let per_second = report.entries as f64 / secs;
    let note = if report.ok() {
        format!(
            "Memory::verify of the whole store on {} thread(s); median/p99 per entry over 4096-entry chunks",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        )
    } else {
        format!("the audit found {} problem(s)", report.problem_count)
    };
    rows.push(
        spec("verify_store")
            .base("raw_verify")
            .target(Target::PerSecond(50_000.0)),
        summarize(&samples, 1),
        Some(per_second),
        Some(n),
        Some(note),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_run_returns_every_row_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let opts = BenchOptions::tiny(dir.path().to_path_buf());
        let mut lines = Vec::new();
        let rows = run(&opts, &mut |l| lines.push(l.to_string())).unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ROW_NAMES);
        for r in &rows {
            assert!(r.median_ns.is_finite() && r.median_ns >= 0.0, "{r:?}");
            assert!(r.p99_ns >= r.median_ns, "{r:?}");
            assert!(r.samples > 0, "{r:?}");
            if let Some(b) = &r.baseline {
                assert!(ROW_NAMES[..4].contains(&b.as_str()));
                assert!(r.ratio.is_some(), "{r:?}");
            }
            assert_eq!(r.target.is_some(), r.meets_target.is_some(), "{r:?}");
        }
        let throughput: Vec<&str> = rows
            .iter()
            .filter(|r| r.per_second.is_some())
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(
            throughput,
            [
                "durable_append_b1",
                "durable_append_b16",
                "durable_append_b256",
                "verify_store"
            ]
        );
        let verify = rows.iter().find(|r| r.name == "verify_store").unwrap();
        assert!(
            verify
                .note
                .as_deref()
                .unwrap()
                .starts_with("Memory::verify"),
            "{verify:?}"
        );
        let gate = rows.iter().find(|r| r.name == "gate_decision").unwrap();
        assert!(gate.note.as_deref().unwrap().ends_with("allow"));
        assert!(lines.iter().any(|l| l == "verify_store"));
        // JSON keys.
        let json = serde_json::to_value(&rows).unwrap();
        let first = json[0].as_object().unwrap();
        for key in [
            "name",
            "median_ns",
            "p99_ns",
            "baseline",
            "ratio",
            "paper_ns",
        ] {
            assert!(first.contains_key(key), "{key}");
        }
        assert!(!first.contains_key("per_second"));
        let durable = json
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "durable_append_b256")
            .unwrap();
        assert!(durable["per_second"].as_f64().unwrap() > 0.0);
        assert_eq!(durable["baseline"], "raw_sign");
        assert_eq!(durable["reference"], "raw_fdatasync");
        assert!(durable["reference_ratio"].as_f64().unwrap() > 0.0);
        assert!(!first.contains_key("reference"));
        let write = rows
            .iter()
            .find(|r| r.name == "write_hot_path_mem")
            .unwrap();
        assert!(write.note.as_deref().unwrap().starts_with("Memory::write"));
        let verify = rows.iter().find(|r| r.name == "entry_verify").unwrap();
        assert_eq!(verify.n, Some(300), "{verify:?}");
    }
}
