//! Semantic and hybrid retrieval in the handle ([`Memory::search_with`]).
//!
//! The handle holds, beside an attached [`TextEmbedder`], an HNSW index
//! ([`VectorIndex`]) of the embeddings of the live, non-control entries with text content,
//! keyed by leaf index, and the scope of each indexed entry (the pre-filter). By default
//! ([`VectorIndexing::Eager`]) it catches up with the log when the model is attached (opening:
//! the whole log), after each write of this handle, and before each semantic search (entries
//! appended by another handle); with [`VectorIndexing::Background`] only in the steps of
//! [`Memory::index_vectors`] its owner runs, and a search only removes what was forgotten. A
//! catch-up removes the targets of tombstones appended since; each new entry's vector is
//! taken from its stored embedding when that row's binding checks (`search/stored.rs`), else
//! computed by the model and stored. So the model runs once per entry over the store's life,
//! at write time when the writer has the model attached, and a process that opens the store
//! reads vectors instead.
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
use crate::search::{
    SearchMode, TextEmbedder, VectorIndexOptions, VectorIndexProgress, VectorIndexing,
};
use crate::store::{EmbeddingRow, StoredEntry};
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::records::Tombstone;
use memlineage_core::{EntryId, Hash256};
use std::collections::{HashMap, HashSet};
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
    indexing: VectorIndexing,
    state: Mutex<State>,
    /// Held by a step of [`Memory::index_vectors`] while it embeds outside `state`: one step
    /// at a time, so two never embed the same entries.
    stepping: Mutex<()>,
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
    pub(crate) fn new(
        embedder: Arc<dyn TextEmbedder>,
        indexing: VectorIndexing,
    ) -> Result<Semantic, Error> {
        let model = embedder.model_id().to_string();
        let index = VectorIndex::new(embedder.dim())
            .map_err(|e| Error::internal(format!("vector index: {e}")))?;
        Ok(Semantic {
            embedder,
            indexing,
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
            stepping: Mutex::new(()),
        })
    }

    pub(crate) fn model_id(&self) -> &str {
        self.embedder.model_id()
    }

    fn eager(&self) -> bool {
        self.indexing == VectorIndexing::Eager
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

/// The vectors of a run of the log's entries, read (or embedded) apart from the index.
struct Chunk {
    /// The entries to index, with their vectors.
    ready: Vec<(Item, Vec<f32>)>,
    /// Leaf indices below this were read.
    next: u64,
    loaded: u64,
    embedded: u64,
    rejected: Vec<RejectedEmbedding>,
}

impl Memory {
    /// Attaches an embedding model: semantic and hybrid search become available. The vector
    /// index is built now, from the stored embeddings whose binding checks (the model embeds
    /// only entries without one, and stores their vectors), and kept up to date after: this
    /// handle's writes embed and store their entries' vectors.
    pub fn with_embedder(self, embedder: Arc<dyn TextEmbedder>) -> Result<Memory, Error> {
        self.with_vector_index(embedder, VectorIndexOptions::default())
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
        self,
        embedder: Arc<dyn TextEmbedder>,
        dir: impl AsRef<std::path::Path>,
    ) -> Result<Memory, Error> {
        let options = VectorIndexOptions {
            saved_in: Some(dir.as_ref().to_path_buf()),
            indexing: VectorIndexing::Eager,
        };
        self.with_vector_index(embedder, options)
    }

    /// Attaches an embedding model with `options`: where the index is saved, and when the
    /// model runs over the log ([`VectorIndexing`]). With [`VectorIndexing::Eager`] this is
    /// [`Memory::with_embedder`] (or [`Memory::with_embedder_saved`]); with
    /// [`VectorIndexing::Background`] the saved index (if it checks) is loaded, the entries
    /// forgotten since are removed from it, and the rest is left to
    /// [`Memory::index_vectors`].
    pub fn with_vector_index(
        mut self,
        embedder: Arc<dyn TextEmbedder>,
        options: VectorIndexOptions,
    ) -> Result<Memory, Error> {
        let semantic = Semantic::new(embedder, options.indexing)?;
        {
            let mut state = semantic.lock()?;
            let from = match &options.saved_in {
                Some(dir) => self.load_saved(&semantic, &mut state, dir)?,
                None => None,
            };
            if semantic.eager() {
                self.catch_up_vectors(&semantic, &mut state)?;
            } else {
                self.apply_tombstones(&mut state)?;
            }
            if let Some(from) = from {
                state.status.snapshot = Some(format!(
                    "loaded: {from} entries saved, {} caught up",
                    state.next - from
                ));
            }
            // A background indexer's owner saves when it sees fit (its index is not caught
            // up here).
            let stale = from.is_none_or(|f| state.next - f >= RESAVE_AFTER);
            if let Some(dir) = &options.saved_in
                && semantic.eager()
                && stale
                && let Err(e) = self.save_state(&semantic, &state, dir)
            {
                state.status.last_error = Some(e.to_string());
            }
        }
        self.semantic = Some(semantic);
        Ok(self)
    }

    /// Loads the index saved in `dir` into `state` when it checks; the number of entries it
    /// covers, or `None` (the reason is kept in the status) when there is none that checks.
    fn load_saved(
        &self,
        semantic: &Semantic,
        state: &mut State,
        dir: &std::path::Path,
    ) -> Result<Option<u64>, Error> {
        let size = self.size()?;
        let loaded = snapshot::load(dir, semantic.model_id(), semantic.embedder.dim(), |n| {
            if n > size {
                return Err(Error::internal(format!("the log holds {size} entries")));
            }
            self.root_at(n)
        });
        Ok(match loaded {
            Ok(l) => {
                state.index = l.index;
                state.next = l.next;
                state.tombstones_next = l.tombstones_next;
                state.scope_of = l.scope_of;
                state.scopes = Scopes::from_list(l.scopes);
                state.status.indexed = state.scope_of.len() as u64;
                state.status.considered = state.next;
                Some(l.next)
            }
            Err(reason) => {
                state.status.snapshot = Some(format!("rebuilt: {reason}"));
                None
            }
        })
    }

    /// Saves the vector index into the directory `dir` (made if missing), for
    /// [`Memory::with_embedder_saved`] to load: after a long run of writes, or before a
    /// process stops. With [`VectorIndexing::Eager`] the index is caught up with the log
    /// first; with [`VectorIndexing::Background`] it is saved as far as it has got (the next
    /// open goes on from there). An error when no model is attached.
    pub fn save_vector_index(&self, dir: impl AsRef<std::path::Path>) -> Result<(), Error> {
        let semantic = self.semantic_or_unavailable()?;
        let mut state = semantic.lock()?;
        if semantic.eager() {
            self.catch_up_vectors(semantic, &mut state)?;
        } else {
            self.apply_tombstones(&mut state)?;
        }
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

    fn semantic_or_unavailable(&self) -> Result<&Semantic, Error> {
        self.semantic.as_ref().ok_or_else(|| {
            Error::Unavailable(
                "semantic and hybrid search need an embedding model: build with the cargo feature `models`, run scripts/fetch-embedding-model.sh, and attach it with Memory::with_embedder".into(),
            )
        })
    }

    /// What the vector index holds and where its vectors came from, when a model is attached.
    pub fn vector_index_status(&self) -> Option<VectorIndexStatus> {
        let s = self.semantic.as_ref()?;
        s.state.lock().ok().map(|st| st.status.clone())
    }

    /// After a write of this handle: embeds and stores the new entries' vectors
    /// ([`VectorIndexing::Eager`] only). The entries are logged whatever happens here; a
    /// failure is kept in the status, and the next catch-up embeds what is missing.
    pub(super) fn index_written(&self) {
        let Some(semantic) = self.semantic.as_ref().filter(|s| s.eager()) else {
            return;
        };
        let Ok(mut state) = semantic.lock() else {
            return;
        };
        let outcome = self.catch_up_vectors(semantic, &mut state);
        state.status.last_error = outcome.err().map(|e| e.to_string());
    }

    /// One step of the vector index through the log: the entries forgotten since are removed,
    /// and the next at most `max_entries` (at least one, at most 512) are indexed — their
    /// stored vectors when the binding checks, else the model's (stored too). The model runs
    /// without holding the index, so searches go on meanwhile. Call it in a loop from a thread
    /// of its own with [`VectorIndexing::Background`] until [`VectorIndexProgress::caught_up`],
    /// then again after new writes; it works with [`VectorIndexing::Eager`] too. An error when
    /// no model is attached, or when reading, embedding or storing fails (nothing is indexed
    /// by that step; the next one tries again).
    pub fn index_vectors(&self, max_entries: u64) -> Result<VectorIndexProgress, Error> {
        let semantic = self.semantic_or_unavailable()?;
        let _one = semantic
            .stepping
            .lock()
            .map_err(|_| Error::internal("the vector indexer's lock is poisoned"))?;
        let (from, tombstones_from) = {
            let mut state = semantic.lock()?;
            self.apply_tombstones(&mut state)?;
            (state.next, state.tombstones_next)
        };
        let size = self.backend.size()?;
        if from >= size {
            return Ok(VectorIndexProgress {
                considered: from,
                log_size: size,
            });
        }
        let want = max_entries.clamp(1, CATCH_UP_CHUNK).min(size - from);
        let outcome = self.read_vectors(semantic, from, want);
        let mut state = semantic.lock()?;
        // A step that read nothing below the log's size would leave the indexer spinning: a
        // store that answers so is reported instead.
        let outcome = outcome.and_then(|c| match c.next > from {
            true => Ok(c),
            false => Err(Error::internal(format!(
                "the store returned no entry from index {from}, though it holds {size}"
            ))),
        });
        let chunk = match outcome {
            Ok(c) => c,
            Err(e) => {
                state.status.last_error = Some(e.to_string());
                return Err(e);
            }
        };
        if state.next != from {
            // An eager catch-up (a search, a write of this handle) indexed these meanwhile.
            return Ok(VectorIndexProgress {
                considered: state.next,
                log_size: size,
            });
        }
        // Tombstones applied while the model ran found nothing to remove for the entries of
        // this chunk (they were not in the index yet): their targets are left out now.
        let late = self.tombstone_targets(tombstones_from, state.tombstones_next)?;
        state.merge(Chunk {
            ready: chunk
                .ready
                .into_iter()
                .filter(|(item, _)| !late.contains(&item.index))
                .collect(),
            ..chunk
        })?;
        self.apply_tombstones(&mut state)?;
        state.status.last_error = None;
        Ok(VectorIndexProgress {
            considered: state.next,
            log_size: size,
        })
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
    /// [`HYBRID_DEPTH`] of both by weighted reciprocal rank fusion ([`fusion::HYBRID`]). The
    /// first `limit` candidates are verified; a candidate that fails verification is dropped
    /// (and reported), not replaced. With [`VectorIndexing::Background`] the semantic ranking
    /// covers the entries the indexer has reached.
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
                    self.lexical_ranking(&*self.lexical_snapshot()?, query, scope, depth)?;
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
        let semantic = self.semantic_or_unavailable()?;
        let q = semantic.embedder.embed(&[query])?;
        let q = q
            .first()
            .ok_or_else(|| Error::internal("the embedding model returned no vector"))?;
        let mut state = semantic.lock()?;
        if semantic.eager() {
            self.catch_up_vectors(semantic, &mut state)?;
        } else {
            self.apply_tombstones(&mut state)?;
        }
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

    /// Removes from the index the targets of the tombstones appended since the last call.
    fn apply_tombstones(&self, state: &mut State) -> Result<(), Error> {
        let store = &*self.backend;
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
        state.status.indexed = state.scope_of.len() as u64;
        Ok(())
    }

    /// The leaf indices of the targets of the tombstones with index in `[from, to)`.
    fn tombstone_targets(&self, from: u64, to: u64) -> Result<HashSet<u64>, Error> {
        let store = &*self.backend;
        let mut targets = HashSet::new();
        if from >= to {
            return Ok(targets);
        }
        for t in store.control_records(EntryKind::Tombstone, from)? {
            if t.index >= to {
                break;
            }
            let target = Tombstone::from_content(&t.content)?.target;
            if let Some(stored) = store.entry_by_id(&target)? {
                targets.insert(stored.index);
            }
        }
        Ok(targets)
    }

    /// Indexes the entries appended since the last catch-up (stored vectors whose binding
    /// checks, else the model's, then stored), and removes the targets of the tombstones
    /// appended since. Reads each call on its own (no snapshot is held while vectors are
    /// stored: a one-connection backend would wait for itself); an entry forgotten meanwhile
    /// is removed at the next catch-up, and the backend keeps no vector for a forgotten entry.
    fn catch_up_vectors(&self, semantic: &Semantic, state: &mut State) -> Result<(), Error> {
        self.apply_tombstones(state)?;
        let size = self.backend.size()?;
        while state.next < size {
            let chunk =
                self.read_vectors(semantic, state.next, CATCH_UP_CHUNK.min(size - state.next))?;
            if chunk.next <= state.next {
                break;
            }
            state.merge(chunk)?;
        }
        Ok(())
    }

    /// The vectors of the entries with leaf index in `[from, from + limit)`: stored ones whose
    /// binding checks, else the model's (stored for the next process). Touches no index.
    fn read_vectors(&self, semantic: &Semantic, from: u64, limit: u64) -> Result<Chunk, Error> {
        let store = &*self.backend;
        let model = semantic.embedder.model_id().to_string();
        let dim = semantic.embedder.dim();
        let entries = store.entries(from, limit)?;
        let mut chunk = Chunk {
            ready: Vec::new(),
            next: from,
            loaded: 0,
            embedded: 0,
            rejected: Vec::new(),
        };
        let Some(last) = entries.last().map(|e| e.index) else {
            return Ok(chunk);
        };
        chunk.next = last + 1;
        let stored: HashMap<u64, EmbeddingRow> = store
            .embeddings(&model, from, last + 1 - from)?
            .into_iter()
            .map(|r| (r.index, r))
            .collect();
        let mut missing: Vec<Item> = Vec::new();
        for item in entries.iter().filter_map(embeddable) {
            match stored.get(&item.index) {
                Some(row) => {
                    match embeddings::checked(row, &model, dim, &item.id, &item.content_hash) {
                        Ok(v) => {
                            chunk.loaded += 1;
                            chunk.ready.push((item, v));
                        }
                        Err(reason) => {
                            chunk.rejected.push(RejectedEmbedding {
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
            chunk.embedded += missing.len() as u64;
            chunk.ready.extend(missing.into_iter().zip(vectors));
        }
        // In leaf order (stored and embedded ones were collected apart).
        chunk.ready.sort_unstable_by_key(|(item, _)| item.index);
        Ok(chunk)
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
    /// Indexes what `chunk` read, and moves past it.
    fn merge(&mut self, chunk: Chunk) -> Result<(), Error> {
        self.status.loaded += chunk.loaded;
        self.status.embedded += chunk.embedded;
        self.status.rejected.extend(chunk.rejected);
        for (item, v) in chunk.ready {
            self.insert(item.index, item.scope, &v)?;
        }
        self.next = self.next.max(chunk.next);
        self.status.considered = self.next;
        self.status.indexed = self.scope_of.len() as u64;
        Ok(())
    }

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
