//! The in-memory store: the whole log in RAM, in the manner of redb's `InMemoryBackend`.
//!
//! A complete backend with the semantics of the SQLite store — dense leaf indices, Merkle nodes
//! written once, lineage edges, writer, kind and id indexes, forgotten rows, raised labels,
//! checkpoints, settings and full-text search — for tests, benchmarks and short-lived agents.
//! Nothing survives the process: "durable" in [`Backend::append`] means visible to every later
//! read of this store.
//!
//! Appends are atomic: the batch is checked (ids new and unique, nodes in order, every
//! forgotten target present, settings not yet set) and every write stage passed before anything
//! changes, so an append that fails leaves the store exactly as it was. One `RwLock` serialises
//! writers; readers share it. Full-text search is BM25 over lowercased alphanumeric tokens (see
//! [`search`]), the same ranking as the SQLite store's FTS5 for ASCII text.

mod search;

use super::backend::{AppendGuard, Backend, BackendRead, TextIndex, WriteStage};
use super::provided::{erased_control, missing_node};
use super::rows::{
    AppendBatch, ControlRecord, EmbeddingRow, EntryLabels, IndexRow, NoteRow, StoredEntry,
    StoredNote, ValueRows,
};
use super::text::SearchTerms;
use crate::error::{Error, InputError, StorageError, StoreState};
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::gate::ValueKey;
use memlineage_core::label::{TrustLabel, Weight};
use memlineage_core::merkle::NodeId;
use memlineage_core::{EntryId, Hash256};
use search::SearchIndex;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The in-memory store. `Send + Sync`; cheap to create; empty until initialised by
/// [`Memory::init`](crate::Memory::init).
#[derive(Debug, Default)]
pub struct MemoryStore {
    /// Shared with the read-only views of this store ([`MemoryStore::read_only_view`]).
    state: Arc<RwLock<State>>,
    read_only: bool,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// A read-only view of this store: it reads the same log as it grows, and refuses both
    /// writes with [`StoreState::ReadOnly`] (what [`OpenMode::ReadOnly`](super::OpenMode)
    /// gives for a store with a location; an in-memory store has none to open again).
    pub fn read_only_view(&self) -> MemoryStore {
        MemoryStore {
            state: Arc::clone(&self.state),
            read_only: true,
        }
    }

    fn writable(&self) -> Result<(), Error> {
        if self.read_only {
            return Err(StoreState::ReadOnly {
                location: "memory:".into(),
            }
            .into());
        }
        Ok(())
    }

    fn read(&self) -> Result<RwLockReadGuard<'_, State>, Error> {
        self.state
            .read()
            .map_err(|_| Error::internal("store lock poisoned by a panic in another thread"))
    }

    fn write(&self) -> Result<RwLockWriteGuard<'_, State>, Error> {
        self.state
            .write()
            .map_err(|_| Error::internal("store lock poisoned by a panic in another thread"))
    }
}

/// One leaf of the log and what is stored beside it: the content, and copies of the signed
/// fields the indexes use (returned by [`BackendRead::index_rows`] for the audit to compare).
#[derive(Debug)]
struct Row {
    id: EntryId,
    leaf: Vec<u8>,
    scope: String,
    writer: String,
    kind: EntryKind,
    label: TrustLabel,
    content: Option<Vec<u8>>,
}

/// Everything the store holds.
#[derive(Debug, Default)]
struct State {
    /// The log, by leaf index.
    rows: Vec<Row>,
    by_id: FastMap<EntryId, u64>,
    /// Every id, in order: id-prefix look-ups.
    ids: BTreeSet<EntryId>,
    /// Complete Merkle nodes: `nodes[level][index]`, each level dense from index 0.
    nodes: Vec<Vec<Hash256>>,
    /// Lineage edges parent → (child's leaf index, child, weight), in log order: a new child
    /// is appended at the end, and a child is found by its index.
    children: FastMap<EntryId, Vec<(u64, EntryId, Weight)>>,
    by_writer: FastMap<String, Vec<u64>>,
    /// Leaf indices of control records (registry, tombstone, distrust, gate decision) by
    /// kind, ascending.
    control: FastMap<EntryKind, Vec<u64>>,
    /// Forgotten entry → the tombstone that forgot it, and whether its content is erased.
    forgotten: FastMap<EntryId, (EntryId, bool)>,
    /// Effective labels raised by distrust records.
    effective: FastMap<EntryId, TrustLabel>,
    checkpoints: BTreeMap<u64, String>,
    settings: BTreeMap<String, String>,
    search: SearchIndex,
    /// Stored embeddings: model → leaf index → (vector bytes, binding).
    embeddings: BTreeMap<String, BTreeMap<u64, (Vec<u8>, Hash256)>>,
    /// The value index: key → leaf indices of the entries whose content carried the value.
    values: FastMap<ValueKey, BTreeSet<u64>>,
}

/// The store's hash maps: keyed by ids, names and texts that writers choose, so hashed with
/// a per-process random key (`ahash`): faster than SipHash on these short keys, and keyed,
/// so that chosen keys cannot be made to collide without knowing the key.
type FastMap<K, V> = HashMap<K, V, ahash::RandomState>;

fn to_usize(n: u64) -> Result<usize, Error> {
    usize::try_from(n).map_err(|_| InputError::OutOfRange(n).into())
}

fn refused(message: String) -> Error {
    StorageError::new("memory", message).into()
}

impl State {
    fn row(&self, index: u64) -> Option<&Row> {
        self.rows.get(usize::try_from(index).ok()?)
    }

    /// The rows `start..start + limit` that exist, with their indices.
    fn row_range(
        &self,
        start: u64,
        limit: u64,
    ) -> Result<impl Iterator<Item = (&Row, u64)>, Error> {
        let end = start.saturating_add(limit).min(self.rows.len() as u64);
        let rows = if start >= end {
            &self.rows[..0]
        } else {
            &self.rows[to_usize(start)?..to_usize(end)?]
        };
        Ok(rows.iter().zip(start..))
    }

    fn stored(&self, index: u64, row: &Row) -> StoredEntry {
        StoredEntry {
            index,
            id: row.id,
            leaf: row.leaf.clone(),
            content: row.content.clone(),
            forgotten_by: self.forgotten.get(&row.id).map(|(t, _)| *t),
            effective_label: self.effective.get(&row.id).copied(),
        }
    }

    fn node(&self, n: NodeId) -> Option<Hash256> {
        let index = usize::try_from(n.index).ok()?;
        self.nodes.get(usize::from(n.level))?.get(index).copied()
    }

    fn in_scope(&self, index: u64, scope: &Scope) -> bool {
        self.row(index).is_some_and(|row| {
            let (s, scope) = (row.scope.as_str(), scope.as_str());
            s == scope
                || (s.len() > scope.len()
                    && s.starts_with(scope)
                    && s.as_bytes().get(scope.len()) == Some(&b'/'))
        })
    }

    /// Checks that `batch` can be applied without failing: what the SQLite store's keys and
    /// constraints refuse, refused here before anything changes.
    fn check(&self, batch: &AppendBatch) -> Result<(), Error> {
        let first = self.rows.len() as u64;
        let mut new_ids = HashSet::with_capacity(batch.entries.len());
        for (e, index) in batch.entries.iter().zip(first..) {
            if e.index != index {
                return Err(refused(format!(
                    "entry at index {} is not dense (expected {index})",
                    e.index
                )));
            }
            if self.by_id.contains_key(&e.id) || !new_ids.insert(e.id) {
                return Err(refused(format!("entry {} is already in the log", e.id)));
            }
        }
        let mut levels: Vec<u64> = self.nodes.iter().map(|l| l.len() as u64).collect();
        for (node, _) in &batch.nodes {
            let level = usize::from(node.level);
            if levels.len() <= level {
                levels.resize(level + 1, 0);
            }
            if levels[level] != node.index {
                return Err(refused(format!(
                    "Merkle node {node} is out of order or already stored"
                )));
            }
            levels[level] += 1;
        }
        let end = first + batch.entries.len() as u64;
        if let Some(f) = batch.forgotten.iter().find(|f| f.target_index >= end) {
            return Err(Error::NotFound(f.target));
        }
        if let Some((k, _)) = batch
            .settings
            .iter()
            .find(|(k, _)| self.settings.contains_key(k))
        {
            return Err(refused(format!("setting `{k}` is already set")));
        }
        Ok(())
    }

    /// Applies a checked batch. Cannot fail.
    fn apply(&mut self, batch: AppendBatch) {
        self.settings.extend(batch.settings);
        for e in batch.entries {
            match self.by_writer.get_mut(&e.writer) {
                Some(list) => list.push(e.index),
                None => {
                    self.by_writer.insert(e.writer.clone(), vec![e.index]);
                }
            }
            if e.kind.is_control() {
                self.control.entry(e.kind).or_default().push(e.index);
            }
            if let Some(text) = &e.search_text {
                self.search.insert(e.index, text);
            }
            for key in &e.values {
                self.values.entry(*key).or_default().insert(e.index);
            }
            self.by_id.insert(e.id, e.index);
            self.ids.insert(e.id);
            self.rows.push(Row {
                id: e.id,
                leaf: e.leaf,
                scope: e.scope,
                writer: e.writer,
                kind: e.kind,
                label: e.label,
                content: Some(e.content),
            });
        }
        for (node, h) in batch.nodes {
            let level = usize::from(node.level);
            if self.nodes.len() <= level {
                self.nodes.resize_with(level + 1, Vec::new);
            }
            self.nodes[level].push(h);
        }
        for e in batch.edges {
            // Rows are committed in index order, so each list stays in log order.
            self.children
                .entry(e.parent)
                .or_default()
                .push((e.child_index, e.child, e.weight));
        }
        for f in batch.forgotten {
            self.forgotten.insert(f.target, (f.tombstone, f.erased));
            self.search.remove(f.target_index);
            for vectors in self.embeddings.values_mut() {
                vectors.remove(&f.target_index);
            }
            if f.erased
                && let Some(row) = usize::try_from(f.target_index)
                    .ok()
                    .and_then(|i| self.rows.get_mut(i))
            {
                row.content = None;
            }
        }
        self.effective.extend(batch.raised);
    }
}

impl BackendRead for State {
    fn size(&self) -> Result<u64, Error> {
        Ok(self.rows.len() as u64)
    }

    fn entries(&self, start: u64, limit: u64) -> Result<Vec<StoredEntry>, Error> {
        Ok(self
            .row_range(start, limit)?
            .map(|(row, i)| self.stored(i, row))
            .collect())
    }

    fn entries_by_index(&self, indices: &[u64]) -> Result<Vec<Option<StoredEntry>>, Error> {
        Ok(indices
            .iter()
            .map(|i| self.row(*i).map(|r| self.stored(*i, r)))
            .collect())
    }

    fn entries_by_id(&self, ids: &[EntryId]) -> Result<Vec<Option<StoredEntry>>, Error> {
        Ok(ids
            .iter()
            .map(|id| {
                let i = *self.by_id.get(id)?;
                Some(self.stored(i, self.row(i)?))
            })
            .collect())
    }

    fn ids_from(&self, from: &EntryId, limit: usize) -> Result<Vec<EntryId>, Error> {
        Ok(self.ids.range(from..).take(limit).copied().collect())
    }

    fn nodes(&self, ids: &[NodeId]) -> Result<Vec<Hash256>, Error> {
        ids.iter()
            .map(|n| self.node(*n).ok_or_else(|| missing_node(n)))
            .collect()
    }

    fn children(&self, id: &EntryId) -> Result<Vec<(EntryId, Weight)>, Error> {
        let mut out: Vec<(EntryId, Weight)> = self
            .children
            .get(id)
            .map(|l| l.iter().map(|(_, c, w)| (*c, *w)).collect())
            .unwrap_or_default();
        out.sort_unstable_by_key(|(id, _)| *id);
        Ok(out)
    }

    /// Binary searches of the parents' child lists (in log order) for the child's index.
    fn edge_weights(&self, edges: &[(EntryId, EntryId)]) -> Result<Vec<Option<Weight>>, Error> {
        Ok(edges
            .iter()
            .map(|(parent, child)| {
                let list = self.children.get(parent)?;
                let index = *self.by_id.get(child)?;
                let at = list.binary_search_by(|(i, _, _)| i.cmp(&index)).ok()?;
                list.get(at)
                    .filter(|(_, c, _)| c == child)
                    .map(|(_, _, w)| *w)
            })
            .collect())
    }

    fn edge_count(&self) -> Result<Option<u64>, Error> {
        Ok(Some(self.children.values().map(|l| l.len() as u64).sum()))
    }

    fn indices_by_writer(&self, writer: &str) -> Result<Vec<u64>, Error> {
        Ok(self.by_writer.get(writer).cloned().unwrap_or_default())
    }

    fn control_records(&self, kind: EntryKind, from: u64) -> Result<Vec<ControlRecord>, Error> {
        // Control kinds are indexed; any other kind is found by its copy in each row.
        let indices: Vec<u64> = if kind.is_control() {
            let all = self.control.get(&kind).map_or(&[][..], Vec::as_slice);
            all[all.partition_point(|i| *i < from)..].to_vec()
        } else {
            let start = to_usize(from.min(self.rows.len() as u64))?;
            (start..self.rows.len())
                .filter(|i| self.rows[*i].kind == kind)
                .map(|i| i as u64)
                .collect()
        };
        indices
            .iter()
            .map(|&index| {
                let row = self.row(index).ok_or_else(|| erased_control(kind, index))?;
                let content = row
                    .content
                    .clone()
                    .ok_or_else(|| erased_control(kind, index))?;
                Ok(ControlRecord {
                    index,
                    leaf: row.leaf.clone(),
                    content,
                })
            })
            .collect()
    }

    /// From the row's copy of the signed label: no leaf is copied or decoded.
    fn labels_by_id(&self, id: &EntryId) -> Result<Option<EntryLabels>, Error> {
        Ok(self.by_id.get(id).and_then(|&index| {
            let row = self.row(index)?;
            Some(EntryLabels {
                index,
                signed: row.label,
                effective: self.effective.get(id).copied(),
            })
        }))
    }

    fn index_rows(&self, start: u64, limit: u64) -> Result<Vec<IndexRow>, Error> {
        Ok(self
            .row_range(start, limit)?
            .map(|(row, index)| IndexRow {
                index,
                scope: row.scope.clone(),
                writer: row.writer.clone(),
                kind: row.kind.as_str().to_string(),
                label: row.label.as_str().to_string(),
                erased: self.forgotten.get(&row.id).map(|(_, erased)| *erased),
            })
            .collect())
    }

    fn latest_checkpoint(&self) -> Result<Option<String>, Error> {
        Ok(self.checkpoints.last_key_value().map(|(_, n)| n.clone()))
    }

    fn checkpoint_notes(&self, max_size: u64, limit: usize) -> Result<Vec<StoredNote>, Error> {
        Ok(self
            .checkpoints
            .range(..=max_size)
            .rev()
            .take(limit)
            .map(|(size, note)| StoredNote {
                size: *size,
                note: note.clone(),
            })
            .collect())
    }

    fn setting(&self, key: &str) -> Result<Option<String>, Error> {
        Ok(self.settings.get(key).cloned())
    }

    fn text_index(&self) -> &dyn TextIndex {
        self
    }

    fn value_carriers(&self, key: &ValueKey, from: u64, limit: usize) -> Result<Vec<u64>, Error> {
        Ok(self
            .values
            .get(key)
            .into_iter()
            .flat_map(|set| set.range(from..))
            .take(limit)
            .copied()
            .collect())
    }

    fn embedding_models(&self) -> Result<Vec<String>, Error> {
        Ok(self
            .embeddings
            .iter()
            .filter(|(_, vectors)| !vectors.is_empty())
            .map(|(model, _)| model.clone())
            .collect())
    }

    fn embeddings(&self, model: &str, start: u64, limit: u64) -> Result<Vec<EmbeddingRow>, Error> {
        let end = start.saturating_add(limit);
        Ok(self
            .embeddings
            .get(model)
            .into_iter()
            .flat_map(|vectors| vectors.range(start..end))
            .map(|(index, (vector, binding))| EmbeddingRow {
                index: *index,
                model: model.to_string(),
                vector: vector.clone(),
                binding: *binding,
            })
            .collect())
    }
}

impl TextIndex for State {
    fn search(&self, terms: &SearchTerms, scope: &Scope, limit: usize) -> Result<Vec<u64>, Error> {
        Ok(self
            .search
            .query(terms, limit, |index| self.in_scope(index, scope)))
    }
}

/// A read snapshot: the store's read lock, held.
struct Snapshot<'a>(RwLockReadGuard<'a, State>);

macro_rules! delegate_read {
    ($target:ty, $via:ident; $($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        impl BackendRead for $target {
            $(fn $name(&self, $($arg: $ty),*) -> $ret {
                $via!(self).$name($($arg),*)
            })*
            fn text_index(&self) -> &dyn TextIndex {
                self
            }
        }
        impl TextIndex for $target {
            fn search(&self, terms: &SearchTerms, scope: &Scope, limit: usize)
                -> Result<Vec<u64>, Error> {
                $via!(self).search(terms, scope, limit)
            }
        }
    };
}

/// Every read of the store under one read lock.
macro_rules! locked {
    ($s:expr) => {
        $s.read()?
    };
}

/// Every read of a snapshot under the lock it holds.
macro_rules! held {
    ($s:expr) => {
        (*$s.0)
    };
}

macro_rules! reads {
    ($target:ty, $via:ident) => {
        super::backend::forward_reads!(delegate_read! { $target, $via; });
    };
}

reads!(MemoryStore, locked);
reads!(Snapshot<'_>, held);

impl Backend for MemoryStore {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn location(&self) -> String {
        "memory:".to_string()
    }

    fn snapshot(&self) -> Result<Box<dyn BackendRead + '_>, Error> {
        Ok(Box::new(Snapshot(self.read()?)))
    }

    fn append(&self, guard: &mut AppendGuard<'_>) -> Result<u64, Error> {
        self.writable()?;
        let mut state = self.write()?;
        let first = state.rows.len() as u64;
        let batch = guard.run(&*state, first)?;
        state.check(&batch)?;
        // Staged: every stage passes before anything changes.
        for stage in WriteStage::ALL {
            guard.reached(stage)?;
        }
        state.apply(batch);
        Ok(first)
    }

    fn save_checkpoint(&self, note: &NoteRow) -> Result<(), Error> {
        self.writable()?;
        self.write()?
            .checkpoints
            .insert(note.size(), note.note().to_string());
        Ok(())
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn save_values(&self, rows: &ValueRows) -> Result<(), Error> {
        self.writable()?;
        let mut state = self.write()?;
        for (key, index) in rows.rows() {
            state.values.entry(*key).or_default().insert(*index);
        }
        if let Some((k, v)) = rows.marker() {
            state.settings.insert(k.to_string(), v.to_string());
        }
        Ok(())
    }

    fn save_embeddings(&self, rows: &[EmbeddingRow]) -> Result<(), Error> {
        let mut state = self.write()?;
        for row in rows {
            // Only for an entry in the log that no tombstone has forgotten (under the write
            // lock, so a tombstone appended first wins).
            let live = state
                .row(row.index)
                .is_some_and(|r| !state.forgotten.contains_key(&r.id));
            if live {
                state
                    .embeddings
                    .entry(row.model.clone())
                    .or_default()
                    .insert(row.index, (row.vector.clone(), row.binding));
            }
        }
        Ok(())
    }
}
