//! Semantic and hybrid retrieval in the handle ([`Memory::search_with`]).
//!
//! The handle holds, beside an attached [`TextEmbedder`], an HNSW index
//! ([`VectorIndex`]) of the embeddings of the live, non-control entries with text content,
//! keyed by leaf index, and the scope of each indexed entry (the pre-filter). Before each
//! semantic search it catches up with the log: entries appended since (by this handle or
//! another) are embedded and added, and the targets of tombstones appended since are removed.
//!
//! Candidates found by the index — or fused with the lexical ranking for `hybrid` — go through
//! exactly the verification of a lexical search (`retrieve.rs`): the index only chooses and
//! orders candidates, so whatever it holds can hide or misrank an entry, never inject one that
//! fails verification, and never change a label (the signed scope is checked again too).

use super::Memory;
use super::retrieve::Retrieval;
use crate::error::Error;
use crate::search::fusion::{HYBRID_DEPTH, reciprocal_rank_fusion};
use crate::search::vector::VectorIndex;
use crate::search::{SearchMode, TextEmbedder};
use crate::store::{Store, StoredEntry};
use memlineage_core::entry::{EntryKind, Scope, SignedEntry};
use memlineage_core::records::Tombstone;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Entries read (and embedded) per step of a catch-up.
const CATCH_UP_CHUNK: u64 = 512;

/// The embedder and the index the handle keeps for semantic retrieval.
pub(crate) struct Semantic {
    embedder: Arc<dyn TextEmbedder>,
    state: Mutex<State>,
}

struct State {
    index: VectorIndex,
    /// Leaf indices below this have been considered.
    next: u64,
    /// Tombstones with index below this have been applied.
    tombstones_next: u64,
    /// The scope of each indexed entry, by leaf index (interned in `scopes`).
    scope_of: HashMap<u64, u32>,
    scopes: Vec<Scope>,
    scope_ids: HashMap<String, u32>,
}

impl Semantic {
    pub(crate) fn new(embedder: Arc<dyn TextEmbedder>) -> Result<Semantic, Error> {
        let index = VectorIndex::new(embedder.dim()).map_err(|e| Error::Invalid(e.to_string()))?;
        Ok(Semantic {
            embedder,
            state: Mutex::new(State {
                index,
                next: 0,
                tombstones_next: 0,
                scope_of: HashMap::new(),
                scopes: Vec::new(),
                scope_ids: HashMap::new(),
            }),
        })
    }

    pub(crate) fn model_id(&self) -> &str {
        self.embedder.model_id()
    }
}

/// The text an entry is embedded from: its content, when it is live, not a control record,
/// and UTF-8 (the text the full-text index gets).
fn embeddable(stored: &StoredEntry) -> Option<(Scope, String)> {
    if stored.forgotten_by.is_some() {
        return None;
    }
    let entry = SignedEntry::from_leaf(&stored.leaf).ok()?;
    let body = entry.body();
    if body.kind.is_control() {
        return None;
    }
    let text = std::str::from_utf8(stored.content.as_deref()?).ok()?;
    Some((body.scope.clone(), text.to_string()))
}

impl<S: Store> Memory<S> {
    /// Attaches an embedding model: semantic and hybrid search become available. The vector
    /// index is built from the log at the first semantic search and kept up to date after.
    pub fn with_embedder(mut self, embedder: Arc<dyn TextEmbedder>) -> Result<Memory<S>, Error> {
        self.semantic = Some(Semantic::new(embedder)?);
        Ok(self)
    }

    /// Bytes the vector index holds, when an embedding model is attached.
    pub fn vector_index_bytes(&self) -> Option<usize> {
        let s = self.semantic.as_ref()?;
        s.state.lock().ok().map(|st| st.index.memory_bytes())
    }

    /// The attached embedding model's id, if any.
    pub fn embedding_model(&self) -> Option<&str> {
        self.semantic.as_ref().map(Semantic::model_id)
    }

    /// A search in `mode` within `scope` and below, verified and rendered like
    /// [`Memory::search`]: `lexical` is BM25 (that search); `semantic` ranks by the cosine
    /// similarity of the query's embedding with the entries'; `hybrid` fuses the top
    /// [`HYBRID_DEPTH`] of both by reciprocal rank fusion. The first `limit` candidates are
    /// verified; a candidate that fails verification is dropped (and reported), not replaced.
    pub fn search_with(
        &self,
        query: &str,
        scope: &Scope,
        limit: usize,
        mode: SearchMode,
    ) -> Result<Retrieval, Error> {
        let indices = match mode {
            SearchMode::Lexical => return self.search(query, scope, limit),
            SearchMode::Semantic => self.semantic_ranking(query, scope, limit)?,
            SearchMode::Hybrid => {
                let depth = HYBRID_DEPTH.max(limit);
                let lexical = self.store.search(query, scope.as_str(), depth)?;
                let semantic = self.semantic_ranking(query, scope, depth)?;
                let mut fused = reciprocal_rank_fusion(&[lexical, semantic], limit);
                fused.truncate(limit);
                fused
            }
        };
        self.retrieve_indices(indices, scope)
    }

    /// The `limit` entries nearest to `query` within `scope`, by leaf index (not verified).
    fn semantic_ranking(
        &self,
        query: &str,
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<u64>, Error> {
        let semantic = self.semantic.as_ref().ok_or_else(|| {
            Error::Invalid(
                "semantic and hybrid search need an embedding model: build with the cargo feature `models`, run scripts/fetch-embedding-model.sh, and attach it with Memory::with_embedder".into(),
            )
        })?;
        let q = semantic.embedder.embed(&[query])?;
        let q = q
            .first()
            .ok_or_else(|| Error::Invalid("the embedding model returned no vector".into()))?;
        let mut state = semantic
            .state
            .lock()
            .map_err(|_| Error::Store("the vector index lock is poisoned".into()))?;
        self.catch_up_vectors(semantic, &mut state)?;
        let State {
            index,
            scope_of,
            scopes,
            ..
        } = &*state;
        let within: Vec<bool> = scopes.iter().map(|s| scope.contains(s)).collect();
        let found = index
            .nearest(q, limit, |doc| {
                scope_of
                    .get(&doc)
                    .is_some_and(|s| within.get(*s as usize).copied().unwrap_or(false))
            })
            .map_err(|e| Error::Invalid(e.to_string()))?;
        Ok(found.into_iter().map(|n| n.doc).collect())
    }

    /// Embeds and indexes the entries appended since the last catch-up, and removes the
    /// targets of the tombstones appended since.
    fn catch_up_vectors(&self, semantic: &Semantic, state: &mut State) -> Result<(), Error> {
        let size = self.store.size()?;
        for t in self
            .store
            .control_records(EntryKind::Tombstone, state.tombstones_next)?
        {
            let target = Tombstone::from_content(&t.content)?.target;
            if let Some(stored) = self.store.entry_by_id(&target)? {
                state
                    .index
                    .remove(stored.index)
                    .map_err(|e| Error::Invalid(e.to_string()))?;
                state.scope_of.remove(&stored.index);
            }
            state.tombstones_next = t.index + 1;
        }
        while state.next < size {
            let chunk = self
                .store
                .entries(state.next, CATCH_UP_CHUNK.min(size - state.next))?;
            let Some(last) = chunk.last().map(|e| e.index) else {
                break;
            };
            let items: Vec<(u64, Scope, String)> = chunk
                .iter()
                .filter_map(|e| embeddable(e).map(|(s, t)| (e.index, s, t)))
                .collect();
            let texts: Vec<&str> = items.iter().map(|(_, _, t)| t.as_str()).collect();
            let vectors = semantic.embedder.embed(&texts)?;
            for ((index, scope, _), v) in items.into_iter().zip(vectors) {
                state
                    .index
                    .insert(index, &v)
                    .map_err(|e| Error::Invalid(e.to_string()))?;
                let id = match state.scope_ids.get(scope.as_str()) {
                    Some(id) => *id,
                    None => {
                        let id = u32::try_from(state.scopes.len()).unwrap_or(u32::MAX);
                        state.scope_ids.insert(scope.as_str().to_string(), id);
                        state.scopes.push(scope);
                        id
                    }
                };
                state.scope_of.insert(index, id);
            }
            state.next = last + 1;
        }
        Ok(())
    }
}
