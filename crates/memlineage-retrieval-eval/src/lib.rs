//! Retrieval quality of MemLineage's three search modes, measured on a labelled set of memory
//! queries (`data/retrieval/memory_queries.json`, [`dataset`]): for each query, the rank of the
//! one stored fact that answers it under lexical (BM25), semantic (all-MiniLM-L6-v2 cosine,
//! through the HNSW index) and hybrid (reciprocal rank fusion of both) search; then recall@8
//! and MRR per mode, overall and per kind of question ([`metrics`]).
//!
//! The rankings are the library's own (`memlineage::search`): the same BM25 top-k, vector
//! index and fusion that `Memory::search_with` runs before verification. Verification does not
//! change a ranking on an untampered store (it drops nothing), so the ranks measured here are
//! those of the full retrieval.
//!
//! This library holds the data model, the rankings and the renderers; `src/main.rs` embeds
//! with the model (feature `models`) and writes `results/retrieval/` and the table of
//! `docs/retrieval.md`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod dataset;
pub mod metrics;
pub mod report;
pub mod templates;

pub use dataset::{Dataset, Kind};

/// How deep each ranking is read: a fact below this rank counts as not found.
pub const DEPTH: usize = 100;

/// Errors of the measurement.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The labelled set is malformed.
    #[error("labelled set: {0}")]
    Data(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A ranking failed.
    #[error("{0}")]
    Run(String),
}
