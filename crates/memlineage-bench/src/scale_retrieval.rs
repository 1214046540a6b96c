//! The scale run's retrieval rows (issue 17): at each size, the new lexical path — the BM25
//! top-k over posting blocks with bounded candidate sets (`memlineage::search::lexical`) followed by the handle's
//! verification and rendering of the 8 results (`Memory::retrieve_indices`, the checks of
//! every search) — beside the index alone and its memory; and, when an embedding model is
//! given, semantic and hybrid retrieval of 8 (query embedding included) and the vector index's
//! memory.
//!
//! The lexical index is built in memory from the store's entries (live, non-control, UTF-8
//! content, with each entry's scope for the exact pre-filter) before the timings; its build
//! time is reported. The vector index is built by the handle at its first semantic search
//! (every entry embedded once: the slow part, reported as `embed`).

use crate::error::BenchError;
use crate::fixtures;
use crate::generate::SCOPE;
use crate::stats::{Budget, measure};
use memlineage::search::lexical::{CANDIDATE_WINDOW, LexicalIndex};
use memlineage::{Memory, SqliteStore};
use memlineage_core::entry::{Scope, SignedEntry};
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

/// The lexical index of the store's searchable entries, and each one's scope (interned).
fn lexical_index(mem: &Memory) -> Result<(LexicalIndex, Vec<u32>, Vec<Scope>), BenchError> {
    let mut ix = LexicalIndex::new();
    let mut scope_of: Vec<u32> = Vec::new();
    let mut scopes: Vec<Scope> = Vec::new();
    let size = mem.size()?;
    let mut start = 0u64;
    while start < size {
        let chunk = mem.unchecked().backend().entries(start, 4096)?;
        let Some(last) = chunk.last().map(|e| e.index) else {
            break;
        };
        for e in &chunk {
            let Ok(entry) = SignedEntry::from_leaf(&e.leaf) else {
                continue;
            };
            let body = entry.body();
            let text = e
                .content
                .as_deref()
                .and_then(|c| std::str::from_utf8(c).ok());
            if body.kind.is_control() || e.forgotten_by.is_some() {
                continue;
            }
            let Some(text) = text else { continue };
            let sid = match scopes.iter().position(|s| *s == body.scope) {
                Some(i) => i,
                None => {
                    scopes.push(body.scope.clone());
                    scopes.len() - 1
                }
            };
            let slot = usize::try_from(e.index).map_err(BenchError::core)?;
            if scope_of.len() <= slot {
                scope_of.resize(slot + 1, u32::MAX);
            }
            scope_of[slot] = u32::try_from(sid).map_err(BenchError::core)?;
            ix.insert(e.index, text);
        }
        start = last + 1;
    }
    Ok((ix, scope_of, scopes))
}

/// The retrieval rows at one size. `embedder`: the model for the semantic rows, if any.
pub fn measure_retrieval(
    path: &std::path::Path,
    n: u64,
    budget: &Budget,
    embedder: Option<std::sync::Arc<dyn memlineage::search::TextEmbedder>>,
) -> Result<RetrievalPoint, BenchError> {
    let mut mem = Memory::open(SqliteStore::open(path)?)?;
    let scope = Scope::new(SCOPE).map_err(BenchError::core)?;
    let queries = fixtures::queries();
    let t = Instant::now();
    let (ix, scope_of, scopes) = lexical_index(&mem)?;
    let lexical_build_s = t.elapsed().as_secs_f64();
    let within: Vec<bool> = scopes.iter().map(|s| scope.contains(s)).collect();
    let accept = |doc: u64| {
        usize::try_from(doc)
            .ok()
            .and_then(|i| scope_of.get(i))
            .and_then(|s| within.get(*s as usize))
            .copied()
            .unwrap_or(false)
    };
    let mut qi = 0usize;
    let topk = measure(budget, || {
        qi = (qi + 1) % queries.len();
        black_box(ix.top_k_within(&queries[qi], 8, CANDIDATE_WINDOW, accept));
    });
    // The lexical top-8 of query `qi`, verified and rendered by `by`.
    let retrieve = |by: &Memory, qi: usize| {
        let found: Vec<u64> = ix
            .top_k_within(&queries[qi], 8, CANDIDATE_WINDOW, accept)
            .iter()
            .map(|h| h.doc)
            .collect();
        black_box(by.retrieve_indices(found, &scope).is_ok());
    };
    let lexical = measure(budget, || {
        qi = (qi + 1) % queries.len();
        retrieve(&mem, qi);
    });
    let cold_mem = Memory::open(SqliteStore::open(path)?)?.with_verified_cache(0);
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
        lexical_index_bytes: ix.memory_bytes() as u64,
        semantic_8_ns: None,
        semantic_8_p99_ns: None,
        hybrid_8_ns: None,
        embed_s: None,
        vector_index_bytes: None,
    };
    drop(ix);
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
