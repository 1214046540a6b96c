//! # memlineage-bench
//!
//! Performance benchmarks of MemLineage (`docs/performance.md`):
//!
//! - [`run`]: every operation measured in this process — median and p99 of many samples, the
//!   raw primitive (Ed25519 sign and verify, one SHA-256 Merkle node, one fdatasync) measured
//!   in the same run, the ratio between them, the paper's figure and the target — behind
//!   `memlineage bench [--json] [--quick]`; [`render_table`] prints it;
//! - [`scale`]: the cost of each operation as the log grows from 10^3 to 10^6 entries, with
//!   peak memory, as a table ([`render_scale_table`]) and an SVG plot ([`scale_svg`]);
//! - [`generate_store`]: writes a valid file store of `n` entries quickly; generated stores
//!   are cached under `target/bench-stores/` ([`cached_store`]);
//! - criterion benches of the same operations in `benches/`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

/// The allocator of every benchmark binary (feature `mimalloc`, on by default): the CLI uses
/// it too, so the examples measure what `memlineage bench` measures; glibc's malloc slowed a
/// warm retrieval in the heap of a 10^6-entry index (issue 17).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod error;
pub mod fixtures;
mod generate;
mod runner;
mod scale;
mod scale_checks;
pub mod scale_retrieval;
mod scale_svg;
mod scale_table;
mod scale_writes;
pub mod stats;
mod store_verify;
pub mod sys;
mod table;
mod write_path;

pub use error::BenchError;
pub use generate::{
    BATCH, GENERATOR_VERSION, Generated, MIN_ENTRIES, REGISTRY_RECORDS, SCOPE, cached_store,
    cached_store_path, default_cache_dir, generate_store,
};
pub use runner::{BenchOptions, BenchRow, ROW_NAMES, run};
pub use scale::{ScaleOptions, ScalePoint, ScaleReport, SharedEmbedder, scale};
pub use scale_checks::{
    FLAT_SPREAD, LOG_SPREAD, RETRIEVAL_BUDGET_NS, RSS_GROWTH_MIB, ScaleCheck, retrieval_checks,
    scale_checks,
};
pub use scale_retrieval::{RetrievalPoint, measure_retrieval};
pub use scale_svg::scale_svg;
pub use scale_table::render_scale_table;
pub use scale_writes::{DurableWriter, WRITE_ROUND, interleaved_writes, write_at};
pub use store_verify::{StoreVerify, sample_entries};
pub use table::{fmt_ns, fmt_rate, render_table};
pub use write_path::MemWrite;
