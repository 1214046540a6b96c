//! The scale run's retrieval rows (issue 17): at each size, `Memory::search` of a handle that
//! keeps its own lexical index (`Memory::with_lexical_index`: the BM25 top-k over posting
//! blocks with bounded candidate sets, caught up with the log inside the search's snapshot,
//! then the verification and rendering of the 8 results that every search does) — beside the
//! ranking alone (`Memory::lexical_top`) and the index's memory; and, when an embedding model
//! is given, semantic and hybrid retrieval of 8 (query embedding included) and the vector
//! index's memory.
//!
//! The handle builds its lexical index at its first search (one read of the log: live,
//! non-control entries with UTF-8 content, and each one's signed scope for the exact
//! pre-filter); that first search is timed as the build. The vector index is built by the
//! handle when the model is attached (every entry without a stored vector embedded once: the
//! slow part, reported as `embed`).

use crate::error::BenchError;
use crate::fixtures;
use crate::generate::SCOPE;
use crate::stats::{Budget, measure};
use memlineage::{Memory, SqliteStore};
use memlineage_core::entry::Scope;
use serde::Serialize;
use std::hint::black_box;
use std::time::Instant;

/// Retrieval costs at one size (ns per operation; bytes).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RetrievalPoint {
    /// Entries in the store.
    pub n: u64,
    /// The lexical top-8 alone (index only): median.
    pub lexical_topk_ns: f64,
    /// Lexical top-8, then verify and render the 8: median.
    pub lexical_8_ns: f64,
    /// Same, p99.
    pub lexical_8_p99_ns: f64,
    /// Lexical top-8, verify and render by a handle that remembers nothing it verified
    /// (`Memory::with_verified_cache(0)`: every signature, proof and parent label from the
    /// store, as the first retrieval of entries never seen): median.
    pub lexical_8_cold_ns: f64,
    /// Building the lexical index from the store, seconds.
    pub lexical_build_s: f64,
    /// Memory of the lexical index.
    pub lexical_index_bytes: u64,
    /// Semantic retrieval of 8 (query embedding, HNSW search, verify, render): median.
    pub semantic_8_ns: Option<f64>,
    /// Same, p99.
    pub semantic_8_p99_ns: Option<f64>,
    /// Hybrid retrieval of 8 (both rankings of 50, fusion, verify, render): median.
    pub hybrid_8_ns: Option<f64>,
    /// Embedding every entry and building the vector index, seconds.
    pub embed_s: Option<f64>,
    /// Memory of the vector index.
    pub vector_index_bytes: Option<u64>,
}

/// The retrieval rows at one size. `embedder`: the model for the semantic rows, if any.
pub fn measure_retrieval(
    path: &std::path::Path,
    n: u64,
    budget: &Budget,
    embedder: Option<std::sync::Arc<dyn memlineage::search::TextEmbedder>>,
) -> Result<RetrievalPoint, BenchError> {
    let mut mem = Memory::open(SqliteStore::open(path)?)?.with_lexical_index();
    let scope = Scope::new(SCOPE).map_err(BenchError::core)?;
    let queries = fixtures::queries();
    let t = Instant::now();
    black_box(mem.lexical_top(&queries[0], &scope, 8)?);
    let lexical_build_s = t.elapsed().as_secs_f64();
    let mut qi = 0usize;
    let topk = measure(budget, || {
        qi = (qi + 1) % queries.len();
        black_box(mem.lexical_top(&queries[qi], &scope, 8).is_ok());
    });
    // The lexical search of 8 for query `qi` (ranked, verified, rendered) by `by`.
    let retrieve = |by: &Memory, qi: usize| {
        black_box(by.search(&queries[qi], &scope, 8).is_ok());
    };
    let lexical = measure(budget, || {
        qi = (qi + 1) % queries.len();
        retrieve(&mem, qi);
    });
    let cold_mem = Memory::open(SqliteStore::open(path)?)?
        .with_verified_cache(0)
        .with_lexical_index();
    black_box(cold_mem.lexical_top(&queries[0], &scope, 8)?);
    let cold = measure(budget, || {
        qi = (qi + 1) % queries.len();
        retrieve(&cold_mem, qi);
    });
    drop(cold_mem);
    let mut point = RetrievalPoint {
        n,
        lexical_topk_ns: topk.median_ns,
        lexical_8_ns: lexical.median_ns,
        lexical_8_p99_ns: lexical.p99_ns,
        lexical_8_cold_ns: cold.median_ns,
        lexical_build_s,
        lexical_index_bytes: mem.lexical_index_stats()?.map_or(0, |s| s.1 as u64),
        semantic_8_ns: None,
        semantic_8_p99_ns: None,
        hybrid_8_ns: None,
        embed_s: None,
        vector_index_bytes: None,
    };
    if let Some(e) = embedder {
        use memlineage::search::SearchMode;
        // Attaching the model builds the vector index: from the stored embeddings, embedding
        // (and storing) only the entries without one.
        let t = Instant::now();
        mem = mem.with_embedder(e)?;
        point.embed_s = Some(t.elapsed().as_secs_f64());
        let semantic = measure(budget, || {
            qi = (qi + 1) % queries.len();
            black_box(
                mem.search_with(&queries[qi], &scope, 8, SearchMode::Semantic)
                    .is_ok(),
            );
        });
        let hybrid = measure(budget, || {
            qi = (qi + 1) % queries.len();
            black_box(
                mem.search_with(&queries[qi], &scope, 8, SearchMode::Hybrid)
                    .is_ok(),
            );
        });
        point.semantic_8_ns = Some(semantic.median_ns);
        point.semantic_8_p99_ns = Some(semantic.p99_ns);
        point.hybrid_8_ns = Some(hybrid.median_ns);
        point.vector_index_bytes = mem.vector_index_bytes().map(|b| b as u64);
    }
    Ok(point)
}
