//! # memlineage-eval
//!
//! The deterministic, network-free evaluation harness of MemLineage (DESIGN.md, "Evaluation";
//! `docs/evaluation.md`). A fixed attacker and a scripted agent reproduce the paper's results:
//! attack success rates per defence cell and workload, benign utility, the τ×K ablation, banking
//! pairs modelled on AgentDojo's banking suite, and a readable two-session laundering trace.
//!
//! Everything is deterministic: in-memory stores, keys from fixed ChaCha20 seeds, a step clock,
//! sorted outputs, rates as exact fractions printed with fixed decimals. Two runs write
//! byte-identical files, whatever the number of threads.
//!
//! ```no_run
//! let opts = memlineage_eval::EvalOptions::new("results");
//! let summary = memlineage_eval::run(&opts, &mut |_stage, _done, _total| {})?;
//! println!("{}", summary.headline());
//! # Ok::<(), memlineage_eval::EvalError>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod ablation;
mod agent;
mod banking;
mod cell;
mod error;
mod grammar;
mod json;
mod parallel;
pub mod progress;
mod rate;
mod report;
mod scenario;
mod svg;
mod trace;
mod workload;
mod world;

pub use cell::{BankCell, Cell};
pub use error::EvalError;
pub use rate::Rate;

use std::collections::BTreeMap;
use std::path::PathBuf;

/// What to run and where to write it.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    /// Directory the artifacts are written to (created if needed; files in it with the
    /// artifacts' names are replaced, other files are left alone).
    pub out_dir: PathBuf,
    /// Worker threads; `None` uses the available parallelism. Never changes an artifact.
    pub threads: Option<usize>,
    /// Overrides every workload's episode count (quick runs; the committed results use the
    /// scenario files' counts).
    pub episodes: Option<u32>,
}

impl EvalOptions {
    /// The defaults: the scenario files' episode counts, all available threads.
    pub fn new(out_dir: impl Into<PathBuf>) -> EvalOptions {
        EvalOptions {
            out_dir: out_dir.into(),
            threads: None,
            episodes: None,
        }
    }
}

/// Largest τ on the grid at which the tip of a K-chain is still untrusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SafeTau {
    /// The largest safe τ, in basis points.
    Tau(u16),
    /// No τ on the grid is safe.
    None,
    /// The weights of this model have not been measured yet.
    NotMeasured,
}

impl SafeTau {
    /// `0.45`, `none` or `not measured`.
    pub fn display(self) -> String {
        match self {
            SafeTau::Tau(bp) => rate::bp_decimal(bp, 2),
            SafeTau::None => "none".to_string(),
            SafeTau::NotMeasured => "not measured".to_string(),
        }
    }
}

/// Banking rates of one cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BankingRates {
    /// Attack success (AgentDojo's security check true) over the core pairs.
    pub asr: Rate,
    /// Utility under attack over the core pairs.
    pub utility: Rate,
    /// Utility without attack over the core pairs.
    pub benign_utility: Rate,
}

/// The headline numbers of a run (the same as `summary.json`).
#[derive(Clone, Debug, Default)]
pub struct EvalSummary {
    /// Attack success rate: cell → workload → rate.
    pub asr: BTreeMap<String, BTreeMap<String, Rate>>,
    /// Benign utility (legitimate dispatch rate): cell → workflow → rate.
    pub utility: BTreeMap<String, BTreeMap<String, Rate>>,
    /// Banking pairs (core six): cell → rates.
    pub banking: BTreeMap<String, BankingRates>,
    /// τ×K ablation, permissive fallback: weight model → K → largest safe τ.
    pub tau_k: BTreeMap<String, BTreeMap<u32, SafeTau>>,
    /// Episodes run (workloads and banking).
    pub episodes: u64,
    /// The files written, relative to the output directory, sorted.
    pub files: Vec<String>,
}

impl EvalSummary {
    /// A few lines for a terminal: ASR per cell over the paper's three workloads, utility, and
    /// banking.
    pub fn headline(&self) -> String {
        report::headline(self)
    }
}

/// Runs the whole evaluation and writes every artifact into `opts.out_dir`.
///
/// `progress(stage, done, total)` is called from the calling thread as work completes (`done`
/// and `total` count units of work across all stages).
pub fn run(
    opts: &EvalOptions,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<EvalSummary, EvalError> {
    let ctx = report::Context::load(opts)?;
    report::run(&ctx, opts, progress)
}
