//! Semantic and hybrid retrieval in the handle ([`Memory::search_with`]).
//!
//! The handle holds, beside an attached [`TextEmbedder`], an HNSW index
//! ([`VectorIndex`]) of the embeddings of the live, non-control entries with text content,
//! keyed by leaf index, and the scope of each indexed entry (the pre-filter). It catches up
//! with the log when the model is attached (opening: the whole log), after each write of this
//! handle, and before each semantic search (entries appended by another handle): the targets
//! of tombstones appended since are removed; each new entry's vector is taken from its stored
//! embedding when that row's binding checks (`search/stored.rs`), else computed by the model and
//! stored. So the model runs once per entry over the store's life, at write time when the
//! writer has the model attached, and a process that opens the store reads vectors instead.
//!
//! Candidates found by the index — or fused with the lexical ranking for `hybrid` — go through
//! exactly the verification of a lexical search (`retrieve.rs`): the index only chooses and
//! orders candidates, so whatever it holds can hide or misrank an entry, never inject one that
//! fails verification, and never change a label (the signed scope is checked again too).

use super::Memory;
use super::retrieve::Retrieval;
use super::searchable::{Scopes, searchable};
use crate::error::Error;
use crate::search::fusion::{self, HYBRID_DEPTH};
use crate::search::stored::{self as embeddings, RejectedEmbedding, VectorIndexStatus};
use crate::search::vector::VectorIndex;
use crate::search::{SearchMode, TextEmbedder};
use crate::store::{EmbeddingRow, StoredEntry};
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::records::Tombstone;
use memlineage_core::{EntryId, Hash256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

mod snapshot;

/// Entries read (and embedded) per step of a catch-up.
const CATCH_UP_CHUNK: u64 = 512;

/// A saved vector index is saved again on open when the catch-up from it indexed at least
/// this many entries (or when it could not be used).
const RESAVE_AFTER: u64 = 10_000;

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
    /// The scope of each indexed entry, by leaf index (its id in `scopes`).
    scope_of: HashMap<u64, u32>,
    scopes: Scopes,
    /// Where the vectors came from (reported by [`Memory::vector_index_status`]).
    status: VectorIndexStatus,
}

impl Semantic {
    pub(crate) fn new(embedder: Arc<dyn TextEmbedder>) -> Result<Semantic, Error> {
        let model = embedder.model_id().to_string();
        let index = VectorIndex::new(embedder.dim())
            .map_err(|e| Error::internal(format!("vector index: {e}")))?;
        Ok(Semantic {
            embedder,
            state: Mutex::new(State {
                index,
                next: 0,
                tombstones_next: 0,
                scope_of: HashMap::new(),
                scopes: Scopes::default(),
                status: VectorIndexStatus {
                    model,
                    ..VectorIndexStatus::default()
                },
            }),
        })
    }

    pub(crate) fn model_id(&self) -> &str {
        self.embedder.model_id()
    }
}

/// An entry to index: its leaf index, id, signed content hash, signed scope and text.
struct Item {
    index: u64,
    id: EntryId,
    content_hash: Hash256,
    scope: Scope,
    text: String,
}

/// The text an entry is embedded from: its searchable text (`searchable.rs`), with what the
/// vector is bound to.
fn embeddable(stored: &StoredEntry) -> Option<Item> {
    let (entry, text) = searchable(stored)?;
    let body = entry.body();
    Some(Item {
        index: stored.index,
        id: entry.id(),
        content_hash: body.content_hash,
        scope: body.scope.clone(),
        text: text.to_string(),
    })
}

impl Memory {
    /// Attaches an embedding model: semantic and hybrid search become available. The vector
    /// index is built now, from the stored embeddings whose binding checks (the model embeds
    /// only entries without one, and stores their vectors), and kept up to date after: this
    /// handle's writes embed and store their entries' vectors.
    pub fn with_embedder(mut self, embedder: Arc<dyn TextEmbedder>) -> Result<Memory, Error> {
        let semantic = Semantic::new(embedder)?;
        {
            let mut state = semantic.lock()?;
            self.catch_up_vectors(&semantic, &mut state)?;
        }
        self.semantic = Some(semantic);
        Ok(self)
    }

    /// [`Memory::with_embedder`], with the vector index saved in the directory `dir`
    /// (`memory/semantic/snapshot.rs`): the index saved there is loaded when it checks — same
    /// model, a prefix of this log (its Merkle root), the index file's digest — and caught up
    /// with the entries appended since, instead of being built from every stored embedding
    /// (~21 min at 10^6 entries on two cores). When none checks it is built as without, and
    /// saved; it is saved again when the catch-up indexed [`RESAVE_AFTER`] entries or more.
    /// [`Memory::vector_index_status`] says which (`snapshot`). A failure to save is reported
    /// there too; the handle works either way. Saving later: [`Memory::save_vector_index`].
    pub fn with_embedder_saved(
        mut self,
        embedder: Arc<dyn TextEmbedder>,
        dir: impl AsRef<std::path::Path>,
    ) -> Result<Memory, Error> {
        let dir = dir.as_ref();
        let semantic = Semantic::new(embedder)?;
        {
            let mut state = semantic.lock()?;
            let size = self.size()?;
            let loaded = snapshot::load(dir, semantic.model_id(), semantic.embedder.dim(), |n| {
                if n > size {
                    return Err(Error::internal(format!("the log holds {size} entries")));
                }
                self.root_at(n)
            });
            let from = match loaded {
                Ok(l) => {
                    state.index = l.index;
                    state.next = l.next;
                    state.tombstones_next = l.tombstones_next;
                    state.scope_of = l.scope_of;
                    state.scopes = Scopes::from_list(l.scopes);
                    Some(l.next)
                }
                Err(reason) => {
                    state.status.snapshot = Some(format!("rebuilt: {reason}"));
                    None
                }
            };
            self.catch_up_vectors(&semantic, &mut state)?;
            if let Some(from) = from {
                state.status.snapshot = Some(format!(
                    "loaded: {from} entries saved, {} caught up",
                    state.next - from
                ));
            }
            let stale = from.is_none_or(|f| state.next - f >= RESAVE_AFTER);
            if stale && let Err(e) = self.save_state(&semantic, &state, dir) {
                state.status.last_error = Some(e.to_string());
            }
        }
        self.semantic = Some(semantic);
        Ok(self)
    }

    /// Saves the vector index into the directory `dir` (made if missing), for
    /// [`Memory::with_embedder_saved`] to load: after a long run of writes, or before a
    /// process stops. An error when no model is attached.
    pub fn save_vector_index(&self, dir: impl AsRef<std::path::Path>) -> Result<(), Error> {
        let semantic = self.semantic.as_ref().ok_or_else(|| {
            Error::Unavailable("no embedding model is attached: there is no vector index".into())
        })?;
        let mut state = semantic.lock()?;
        self.catch_up_vectors(semantic, &mut state)?;
        self.save_state(semantic, &state, dir.as_ref())
    }

    fn save_state(
        &self,
        semantic: &Semantic,
        state: &State,
        dir: &std::path::Path,
    ) -> Result<(), Error> {
        let root = self.root_at(state.next)?;
        snapshot::save(dir, semantic.model_id(), state, &root)
    }

    /// What the vector index holds and where its vectors came from, when a model is attached.
    pub fn vector_index_status(&self) -> Option<VectorIndexStatus> {
        let s = self.semantic.as_ref()?;
        s.state.lock().ok().map(|st| st.status.clone())
    }

    /// After a write of this handle: embeds and stores the new entries' vectors. The entries
    /// are logged whatever happens here; a failure is kept in the status, and the next catch-up
    /// embeds what is missing.
    pub(super) fn index_written(&self) {
        let Some(semantic) = self.semantic.as_ref() else {
            return;
        };
        let Ok(mut state) = semantic.lock() else {
            return;
        };
        let outcome = self.catch_up_vectors(semantic, &mut state);
        state.status.last_error = outcome.err().map(|e| e.to_string());
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
    /// [`HYBRID_DEPTH`] of both by weighted reciprocal rank fusion ([`fusion::HYBRID`]). The first `limit` candidates are
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
                let lexical =
                    self.lexical_ranking(&*self.backend.snapshot()?, query, scope, depth)?;
                let semantic = self.semantic_ranking(query, scope, depth)?;
                fusion::hybrid(&lexical, &semantic, limit)
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
            Error::Unavailable(
                "semantic and hybrid search need an embedding model: build with the cargo feature `models`, run scripts/fetch-embedding-model.sh, and attach it with Memory::with_embedder".into(),
            )
        })?;
        let q = semantic.embedder.embed(&[query])?;
        let q = q
            .first()
            .ok_or_else(|| Error::internal("the embedding model returned no vector"))?;
        let mut state = semantic.lock()?;
        self.catch_up_vectors(semantic, &mut state)?;
        let State {
            index,
            scope_of,
            scopes,
            ..
        } = &*state;
        let within = scopes.within(scope);
        let found = index
            .nearest(q, limit, |doc| {
                scope_of
                    .get(&doc)
                    .is_some_and(|s| within.get(*s as usize).copied().unwrap_or(false))
            })
            .map_err(|e| Error::internal(format!("vector index: {e}")))?;
        Ok(found.into_iter().map(|n| n.doc).collect())
    }

    /// Indexes the entries appended since the last catch-up (stored vectors whose binding
    /// checks, else the model's, then stored), and removes the targets of the tombstones
    /// appended since. Reads each call on its own (no snapshot is held while vectors are
    /// stored: a one-connection backend would wait for itself); an entry forgotten meanwhile
    /// is removed at the next catch-up, and the backend keeps no vector for a forgotten entry.
    fn catch_up_vectors(&self, semantic: &Semantic, state: &mut State) -> Result<(), Error> {
        let store = &*self.backend;
        let size = store.size()?;
        for t in store.control_records(EntryKind::Tombstone, state.tombstones_next)? {
            let target = Tombstone::from_content(&t.content)?.target;
            if let Some(stored) = store.entry_by_id(&target)? {
                state
                    .index
                    .remove(stored.index)
                    .map_err(|e| Error::internal(format!("vector index: {e}")))?;
                state.scope_of.remove(&stored.index);
            }
            state.tombstones_next = t.index + 1;
        }
        let model = semantic.embedder.model_id().to_string();
        let dim = semantic.embedder.dim();
        while state.next < size {
            let chunk = store.entries(state.next, CATCH_UP_CHUNK.min(size - state.next))?;
            let Some(last) = chunk.last().map(|e| e.index) else {
                break;
            };
            let stored: HashMap<u64, EmbeddingRow> = store
                .embeddings(&model, state.next, last + 1 - state.next)?
                .into_iter()
                .map(|r| (r.index, r))
                .collect();
            let mut ready: Vec<(Item, Vec<f32>)> = Vec::new();
            let mut missing: Vec<Item> = Vec::new();
            for item in chunk.iter().filter_map(embeddable) {
                match stored.get(&item.index) {
                    Some(row) => {
                        match embeddings::checked(row, &model, dim, &item.id, &item.content_hash) {
                            Ok(v) => {
                                state.status.loaded += 1;
                                ready.push((item, v));
                            }
                            Err(reason) => {
                                state.status.rejected.push(RejectedEmbedding {
                                    index: item.index,
                                    reason,
                                });
                                missing.push(item);
                            }
                        }
                    }
                    None => missing.push(item),
                }
            }
            // Content that does not match its signed hash is never embedded: its vector would
            // be bound to the signed hash. (Its stored vector, if bound, is used: verification
            // then drops the entry as a lexical search does.)
            missing.retain(|i| Hash256::of(i.text.as_bytes()) == i.content_hash);
            if !missing.is_empty() {
                let texts: Vec<&str> = missing.iter().map(|i| i.text.as_str()).collect();
                let vectors = semantic.embedder.embed(&texts)?;
                if vectors.len() != missing.len() {
                    return Err(Error::internal(format!(
                        "the embedding model returned {} vectors for {} texts",
                        vectors.len(),
                        missing.len()
                    )));
                }
                let rows: Vec<EmbeddingRow> = missing
                    .iter()
                    .zip(&vectors)
                    .map(|(i, v)| embeddings::row(i.index, &model, &i.id, &i.content_hash, v))
                    .collect();
                // A read-only open (a monitor, an auditor) keeps its embeddings in memory only.
                if !self.backend.read_only() {
                    self.backend.save_embeddings(&rows)?;
                }
                state.status.embedded += missing.len() as u64;
                ready.extend(missing.into_iter().zip(vectors));
            }
            for (item, v) in ready {
                state.insert(item.index, item.scope, &v)?;
            }
            state.next = last + 1;
        }
        state.status.indexed = state.scope_of.len() as u64;
        Ok(())
    }
}

impl Semantic {
    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>, Error> {
        self.state
            .lock()
            .map_err(|_| Error::internal("the vector index lock is poisoned"))
    }
}

impl State {
    /// Adds (or replaces) the vector of the entry at `index`, with its scope.
    fn insert(&mut self, index: u64, scope: Scope, vector: &[f32]) -> Result<(), Error> {
        self.index
            .insert(index, vector)
            .map_err(|e| Error::internal(format!("vector index: {e}")))?;
        let id = self.scopes.intern(&scope);
        self.scope_of.insert(index, id);
        Ok(())
    }
}
