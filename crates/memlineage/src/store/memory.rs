//! The in-memory store: the whole log in RAM, in the manner of redb's `InMemoryBackend`.
//!
//! A complete backend with the semantics of the SQLite store — dense leaf indices, complete
//! Merkle nodes written once, derivation edges, writer and registry indexes, tombstones,
//! distrust raises, checkpoints, settings and full-text search — for tests, benchmarks,
//! evaluation and short-lived agents. Nothing survives the process: "durable" in
//! [`Store::append`] means visible to every later read of this store.
//!
//! Appends are atomic: the batch is checked and staged (ids unique, node hashes computed,
//! every effect's target present) before anything changes, so an append that fails — in the
//! guard or in staging — leaves the store exactly as it was. One `RwLock` serialises writers;
//! readers share it. Full-text search is BM25 over lowercased alphanumeric tokens (see
//! [`search`]), the same ranking as the SQLite store's FTS5 for ASCII text.

mod search;

use super::{
    AppendGuard, Effect, IndexRow, NewRecord, RegistryRecord, Store, StoreRead, StoredEntry,
};
use crate::error::Error;
use memlineage_core::entry::EntryKind;
use memlineage_core::label::{TrustLabel, Weight};
use memlineage_core::merkle::{self, NodeId};
use memlineage_core::{EntryId, Hash256};
use search::SearchIndex;
use std::collections::{BTreeMap, HashMap};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The in-memory store. `Send + Sync`; cheap to create; empty until initialised by
/// [`Memory::init`](crate::Memory::init).
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: RwLock<State>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn read(&self) -> Result<RwLockReadGuard<'_, State>, Error> {
        self.state
            .read()
            .map_err(|_| Error::Store("store lock poisoned by a panic in another thread".into()))
    }

    fn write(&self) -> Result<RwLockWriteGuard<'_, State>, Error> {
        self.state
            .write()
            .map_err(|_| Error::Store("store lock poisoned by a panic in another thread".into()))
    }
}

/// One leaf of the log and what is stored beside it: the content, and copies of the signed
/// fields the indexes use (returned by [`StoreRead::index_rows`] for the audit to compare).
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
    /// Complete Merkle nodes: `nodes[level][index]`, each level dense from index 0.
    nodes: Vec<Vec<Hash256>>,
    /// Derivation edges parent → (child's leaf index, child, weight), in log order: a new
    /// child is appended at the end (no search, no shifting), and a child is found by its
    /// index.
    children: FastMap<EntryId, Vec<(u64, EntryId, Weight)>>,
    by_writer: FastMap<String, Vec<u64>>,
    /// Leaf indices of control records (registry, tombstone, distrust, gate decision) by
    /// kind, ascending.
    control: FastMap<EntryKind, Vec<u64>>,
    /// Forgotten entry → the tombstone that forgot it, and whether it erased the content.
    forgotten: FastMap<EntryId, (EntryId, bool)>,
    /// Effective labels raised by distrust records.
    effective: FastMap<EntryId, TrustLabel>,
    checkpoints: BTreeMap<u64, String>,
    settings: BTreeMap<String, String>,
    search: SearchIndex,
}

/// The store's hash maps: keyed by ids, names and texts that writers choose, so hashed with
/// a per-process random key (`ahash`): faster than SipHash on these short keys, and keyed,
/// so that chosen keys cannot be made to collide without knowing the key.
type FastMap<K, V> = HashMap<K, V, ahash::RandomState>;

fn to_usize(n: u64) -> Result<usize, Error> {
    usize::try_from(n).map_err(|_| Error::Invalid(format!("{n} is out of range")))
}

impl State {
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

    fn in_scope(&self, index: u64, scope: &str) -> bool {
        let Some(row) = usize::try_from(index).ok().and_then(|i| self.rows.get(i)) else {
            return false;
        };
        let s = row.scope.as_str();
        s == scope
            || (s.len() > scope.len()
                && s.starts_with(scope)
                && s.as_bytes().get(scope.len()) == Some(&b'/'))
    }
}

impl StoreRead for State {
    fn size(&self) -> Result<u64, Error> {
        Ok(self.rows.len() as u64)
    }

    fn entry_by_id(&self, id: &EntryId) -> Result<Option<StoredEntry>, Error> {
        Ok(self.by_id.get(id).and_then(|i| {
            let row = self.rows.get(usize::try_from(*i).ok()?)?;
            Some(self.stored(*i, row))
        }))
    }

    fn entry_by_index(&self, index: u64) -> Result<Option<StoredEntry>, Error> {
        Ok(usize::try_from(index)
            .ok()
            .and_then(|i| self.rows.get(i))
            .map(|row| self.stored(index, row)))
    }

    fn entries(&self, start: u64, limit: u64) -> Result<Vec<StoredEntry>, Error> {
        Ok(self
            .row_range(start, limit)?
            .map(|(row, i)| self.stored(i, row))
            .collect())
    }

    fn nodes(&self, ids: &[NodeId]) -> Result<Vec<Hash256>, Error> {
        ids.iter()
            .map(|n| {
                self.node(*n).ok_or_else(|| {
                    Error::Integrity(format!(
                        "Merkle node (level {}, index {}) is missing",
                        n.level, n.index
                    ))
                })
            })
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

    fn indices_by_writer(&self, writer: &str) -> Result<Vec<u64>, Error> {
        Ok(self.by_writer.get(writer).cloned().unwrap_or_default())
    }

    fn registry_records(&self, from: u64) -> Result<Vec<RegistryRecord>, Error> {
        self.control_records(EntryKind::Registry, from)
    }

    fn latest_checkpoint(&self) -> Result<Option<String>, Error> {
        Ok(self.checkpoints.last_key_value().map(|(_, n)| n.clone()))
    }

    fn checkpoint_notes(&self, max_size: u64, limit: usize) -> Result<Vec<(u64, String)>, Error> {
        Ok(self
            .checkpoints
            .range(..=max_size)
            .rev()
            .take(limit)
            .map(|(s, n)| (*s, n.clone()))
            .collect())
    }

    fn search(&self, query: &str, scope: &str, limit: usize) -> Result<Vec<u64>, Error> {
        Ok(self
            .search
            .query(query, limit, |index| self.in_scope(index, scope)))
    }

    fn setting(&self, key: &str) -> Result<Option<String>, Error> {
        Ok(self.settings.get(key).cloned())
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

    fn control_records(&self, kind: EntryKind, from: u64) -> Result<Vec<RegistryRecord>, Error> {
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
                let row = usize::try_from(index)
                    .ok()
                    .and_then(|i| self.rows.get(i))
                    .ok_or_else(|| {
                        Error::Integrity(format!("{kind} record at index {index} is missing"))
                    })?;
                let content = row.content.clone().ok_or_else(|| {
                    Error::Integrity(format!(
                        "{kind} record at index {index} has no content (control records are never erased)"
                    ))
                })?;
                Ok(RegistryRecord {
                    index,
                    leaf: row.leaf.clone(),
                    content,
                })
            })
            .collect()
    }

    /// From the row's copy of the signed label: no leaf is copied or decoded.
    fn labels_by_id(&self, id: &EntryId) -> Result<Option<super::EntryLabels>, Error> {
        Ok(self.by_id.get(id).and_then(|&index| {
            let row = self.rows.get(usize::try_from(index).ok()?)?;
            Some(super::EntryLabels {
                index,
                signed: row.label,
                effective: self.effective.get(id).copied(),
            })
        }))
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
}

/// A batch, checked and with its node hashes computed, ready to commit without failing.
struct Staged {
    /// The leaf bytes of each record, in order.
    leaves: Vec<Vec<u8>>,
    /// New complete nodes, in the order they were completed.
    nodes: Vec<(NodeId, Hash256)>,
    /// Forget effects with the target's leaf index: (index, target, tombstone, erase).
    forgets: Vec<(u64, EntryId, EntryId, bool)>,
}

impl State {
    /// Checks a batch that would start at leaf `first` and computes everything it adds.
    fn stage(
        &self,
        first: u64,
        records: &[NewRecord],
        effects: &[Effect],
    ) -> Result<Staged, Error> {
        let mut batch_ids: FastMap<EntryId, u64> =
            FastMap::with_capacity_and_hasher(records.len(), Default::default());
        let mut leaves = Vec::with_capacity(records.len());
        let mut fresh: FastMap<NodeId, Hash256> = FastMap::default();
        let mut nodes = Vec::with_capacity(records.len() * 2);
        for (offset, rec) in records.iter().enumerate() {
            let index = first + offset as u64;
            let id = rec.entry.id();
            if self.by_id.contains_key(&id) || batch_ids.insert(id, index).is_some() {
                return Err(Error::Store(format!("entry {id} is already in the log")));
            }
            let leaf = rec.entry.to_leaf();
            let lh = merkle::leaf_hash(&leaf);
            let leaf_node = NodeId::leaf(index);
            fresh.insert(leaf_node, lh);
            nodes.push((leaf_node, lh));
            for node in merkle::completed_by_append(index) {
                let (l, r) = node
                    .children()
                    .ok_or_else(|| Error::Integrity("a completed node has no children".into()))?;
                let fetch = |n: NodeId| {
                    fresh
                        .get(&n)
                        .copied()
                        .or_else(|| self.node(n))
                        .ok_or_else(|| {
                            Error::Integrity(format!(
                                "Merkle node (level {}, index {}) is missing",
                                n.level, n.index
                            ))
                        })
                };
                let h = merkle::node_hash(&fetch(l)?, &fetch(r)?);
                fresh.insert(node, h);
                nodes.push((node, h));
            }
            leaves.push(leaf);
        }
        let mut forgets = Vec::new();
        for effect in effects {
            if let Effect::Forget {
                target,
                tombstone,
                erase,
            } = effect
            {
                let index = self
                    .by_id
                    .get(target)
                    .or_else(|| batch_ids.get(target))
                    .copied()
                    .ok_or(Error::NotFound(*target))?;
                forgets.push((index, *target, *tombstone, *erase));
            }
        }
        Ok(Staged {
            leaves,
            nodes,
            forgets,
        })
    }

    /// Applies a staged batch. Cannot fail: everything was checked by [`State::stage`].
    fn commit(&mut self, first: u64, records: &[NewRecord], staged: Staged, effects: &[Effect]) {
        for ((offset, rec), leaf) in records.iter().enumerate().zip(staged.leaves) {
            let index = first + offset as u64;
            let body = rec.entry.body();
            let id = rec.entry.id();
            for p in &body.parents {
                // Rows are committed in index order, so the list stays in log order.
                self.children
                    .entry(p.id)
                    .or_default()
                    .push((index, id, p.weight));
            }
            match self.by_writer.get_mut(&body.writer) {
                Some(list) => list.push(index),
                None => {
                    self.by_writer.insert(body.writer.clone(), vec![index]);
                }
            }
            if body.kind.is_control() {
                self.control.entry(body.kind).or_default().push(index);
            }
            if let Some(text) = &rec.search_text {
                self.search.insert(index, text);
            }
            self.by_id.insert(id, index);
            self.rows.push(Row {
                id,
                leaf,
                scope: body.scope.as_str().to_string(),
                writer: body.writer.clone(),
                kind: body.kind,
                label: body.label,
                content: Some(rec.content.clone()),
            });
        }
        for (node, h) in staged.nodes {
            let level = usize::from(node.level);
            if self.nodes.len() <= level {
                self.nodes.resize_with(level + 1, Vec::new);
            }
            self.nodes[level].push(h);
        }
        for (index, target, tombstone, erase) in staged.forgets {
            // The latest tombstone is recorded; erasure is sticky (the bytes are gone).
            let erased = erase || self.forgotten.get(&target).is_some_and(|(_, e)| *e);
            self.forgotten.insert(target, (tombstone, erased));
            self.search.remove(index);
            if erase
                && let Some(row) = usize::try_from(index)
                    .ok()
                    .and_then(|i| self.rows.get_mut(i))
            {
                row.content = None;
            }
        }
        for effect in effects {
            if let Effect::RaiseLabel { id, label } = effect {
                self.effective.insert(*id, *label);
            }
        }
    }
}

macro_rules! delegate_read {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        impl StoreRead for MemoryStore {
            $(fn $name(&self, $($arg: $ty),*) -> $ret {
                self.read()?.$name($($arg),*)
            })*
        }
    };
}

// Every read under one read lock; `entries_by_index` and `entries_by_id` are the provided
// loops over `State`, so a whole list is read under one lock too.
delegate_read! {
    size() -> Result<u64, Error>;
    entry_by_id(id: &EntryId) -> Result<Option<StoredEntry>, Error>;
    entry_by_index(index: u64) -> Result<Option<StoredEntry>, Error>;
    entries(start: u64, limit: u64) -> Result<Vec<StoredEntry>, Error>;
    entries_by_index(indices: &[u64]) -> Result<Vec<Option<StoredEntry>>, Error>;
    entries_by_id(ids: &[EntryId]) -> Result<Vec<Option<StoredEntry>>, Error>;
    nodes(ids: &[NodeId]) -> Result<Vec<Hash256>, Error>;
    children(id: &EntryId) -> Result<Vec<(EntryId, Weight)>, Error>;
    indices_by_writer(writer: &str) -> Result<Vec<u64>, Error>;
    registry_records(from: u64) -> Result<Vec<RegistryRecord>, Error>;
    latest_checkpoint() -> Result<Option<String>, Error>;
    checkpoint_notes(max_size: u64, limit: usize) -> Result<Vec<(u64, String)>, Error>;
    search(query: &str, scope: &str, limit: usize) -> Result<Vec<u64>, Error>;
    setting(key: &str) -> Result<Option<String>, Error>;
    index_rows(start: u64, limit: u64) -> Result<Vec<IndexRow>, Error>;
    control_records(kind: EntryKind, from: u64) -> Result<Vec<RegistryRecord>, Error>;
    labels_by_id(id: &EntryId) -> Result<Option<super::EntryLabels>, Error>;
    edge_weights(edges: &[(EntryId, EntryId)]) -> Result<Vec<Option<Weight>>, Error>;
    edge_count() -> Result<Option<u64>, Error>;
}

impl Store for MemoryStore {
    fn append(&self, records: &[NewRecord], guard: &mut AppendGuard<'_>) -> Result<u64, Error> {
        let mut state = self.write()?;
        let first = state.rows.len() as u64;
        let effects = guard(&*state, first, records)?;
        let staged = state.stage(first, records, &effects)?;
        state.commit(first, records, staged, &effects);
        Ok(first)
    }

    fn save_checkpoint(&self, size: u64, note: &str) -> Result<(), Error> {
        self.write()?.checkpoints.insert(size, note.to_string());
        Ok(())
    }

    fn set_setting(&self, key: &str, value: &str) -> Result<(), Error> {
        self.write()?
            .settings
            .insert(key.to_string(), value.to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::SigningKey;
    use memlineage_core::entry::{EntryBody, Parent, Scope, SignedEntry};
    use memlineage_core::keys;
    use memlineage_core::label::Fallback;
    use memlineage_core::merkle::MemoryTree;

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[7u8; 32])
    }

    fn record(n: u64, scope: &str, text: &str, parents: Vec<Parent>) -> NewRecord {
        let k = key();
        let body = EntryBody {
            scope: Scope::new(scope).unwrap(),
            writer: "agent".into(),
            key_id: keys::key_id(&k.verifying_key()),
            kind: if parents.is_empty() {
                EntryKind::Observation
            } else {
                EntryKind::Derived
            },
            content_hash: Hash256::of(text.as_bytes()),
            content_len: text.len() as u64,
            source_hash: None,
            context_hash: None,
            parents,
            attribution: "explicit".into(),
            tau: Weight::from_bp(5000).unwrap(),
            fallback: Fallback::Strict,
            label: TrustLabel::Trusted,
            created_at_ms: 1_700_000_000_000 + n,
            metadata: Default::default(),
        };
        NewRecord {
            entry: SignedEntry::sign(body, &k).unwrap(),
            content: text.as_bytes().to_vec(),
            search_text: Some(text.to_string()),
        }
    }

    fn accept_all(_: &dyn StoreRead, _: u64, _: &[NewRecord]) -> Result<Vec<Effect>, Error> {
        Ok(Vec::new())
    }

    #[test]
    fn nodes_match_a_reference_tree_at_every_size() {
        let store = MemoryStore::new();
        let mut tree = MemoryTree::new();
        for batch in [1usize, 2, 5, 16, 3, 37] {
            let first = store.size().unwrap();
            let recs: Vec<NewRecord> = (0..batch as u64)
                .map(|i| record(first + i, "a/b", &format!("entry {}", first + i), vec![]))
                .collect();
            assert_eq!(store.append(&recs, &mut accept_all).unwrap(), first);
            for r in &recs {
                tree.append(&r.entry.to_leaf());
            }
            let size = store.size().unwrap();
            assert_eq!(size, tree.len());
            for s in 1..=size {
                let root = merkle::root_from_nodes(&store.nodes(&merkle::root_nodes(s)).unwrap());
                assert_eq!(root, tree.root_at(s).unwrap(), "size {s}");
            }
        }
        assert!(matches!(
            store.nodes(&[NodeId::new(0, 10_000)]),
            Err(Error::Integrity(_))
        ));
    }

    #[test]
    fn reads_by_id_index_range_writer_and_edges() {
        let store = MemoryStore::new();
        let a = record(0, "x", "alpha", vec![]);
        let b = record(1, "x", "beta", vec![]);
        let (ia, ib) = (a.entry.id(), b.entry.id());
        store.append(&[a.clone(), b], &mut accept_all).unwrap();
        let w = Weight::from_bp(7000).unwrap();
        let mut ps = vec![Parent { id: ia, weight: w }, Parent { id: ib, weight: w }];
        EntryBody::normalise_parents(&mut ps);
        let c = record(2, "x/y", "gamma", ps);
        let d = record(3, "x", "delta", vec![Parent { id: ia, weight: w }]);
        let (ic, id) = (c.entry.id(), d.entry.id());
        store.append(&[c, d], &mut accept_all).unwrap();
        let got = store.entry_by_id(&ia).unwrap().unwrap();
        assert_eq!((got.index, got.leaf), (0, a.entry.to_leaf()));
        assert_eq!(got.content.as_deref(), Some(&b"alpha"[..]));
        assert_eq!(store.entry_by_index(2).unwrap().unwrap().id, ic);
        assert!(store.entry_by_index(4).unwrap().is_none());
        let range: Vec<u64> = store
            .entries(1, 2)
            .unwrap()
            .iter()
            .map(|e| e.index)
            .collect();
        assert_eq!(range, [1, 2]);
        assert!(store.entries(9, 5).unwrap().is_empty());
        assert_eq!(store.entries(3, u64::MAX).unwrap().len(), 1);
        assert_eq!(store.indices_by_writer("agent").unwrap(), [0, 1, 2, 3]);
        assert!(store.indices_by_writer("nobody").unwrap().is_empty());
        let kids: Vec<EntryId> = store
            .children(&ia)
            .unwrap()
            .iter()
            .map(|(c, _)| *c)
            .collect();
        let mut sorted = vec![ic, id];
        sorted.sort();
        assert_eq!(kids, sorted, "children are sorted by id");
        assert_eq!(store.children(&ib).unwrap(), [(ic, w)]);
        assert!(store.children(&ic).unwrap().is_empty());
    }

    #[test]
    fn failed_appends_change_nothing() {
        let store = MemoryStore::new();
        let a = record(0, "x", "alpha", vec![]);
        store
            .append(std::slice::from_ref(&a), &mut accept_all)
            .unwrap();
        // The guard refuses.
        let b = record(1, "x", "beta", vec![]);
        let err = store
            .append(std::slice::from_ref(&b), &mut |_, _, _| {
                Err(Error::Invalid("no".into()))
            })
            .unwrap_err();
        assert!(matches!(err, Error::Invalid(_)));
        // A duplicate id, inside the batch or against the log.
        assert!(
            store
                .append(&[b.clone(), b.clone()], &mut accept_all)
                .is_err()
        );
        assert!(store.append(&[b.clone(), a], &mut accept_all).is_err());
        // A forget effect whose target does not exist.
        let ghost = EntryId(Hash256::of(b"ghost"));
        let err = store
            .append(std::slice::from_ref(&b), &mut |_, _, _| {
                Ok(vec![Effect::Forget {
                    target: ghost,
                    tombstone: ghost,
                    erase: true,
                }])
            })
            .unwrap_err();
        assert!(matches!(err, Error::NotFound(_)));
        assert_eq!(store.size().unwrap(), 1);
        assert!(store.search("beta", "x", 10).unwrap().is_empty());
        assert_eq!(
            store
                .read()
                .unwrap()
                .nodes
                .iter()
                .map(Vec::len)
                .sum::<usize>(),
            1
        );
        assert_eq!(store.append(&[b], &mut accept_all).unwrap(), 1);
    }

    #[test]
    fn effects_forget_erase_and_raise() {
        let store = MemoryStore::new();
        let a = record(0, "x", "the vault code", vec![]);
        let b = record(1, "x", "the vault place", vec![]);
        let (ia, ib) = (a.entry.id(), b.entry.id());
        store.append(&[a, b], &mut accept_all).unwrap();
        assert_eq!(store.search("vault", "x", 10).unwrap().len(), 2);
        let t = record(2, "x", "tombstone", vec![]);
        let it = t.entry.id();
        store
            .append(&[t], &mut |_, _, _| {
                Ok(vec![
                    Effect::Forget {
                        target: ia,
                        tombstone: it,
                        erase: true,
                    },
                    Effect::RaiseLabel {
                        id: ib,
                        label: TrustLabel::External,
                    },
                ])
            })
            .unwrap();
        let fa = store.entry_by_id(&ia).unwrap().unwrap();
        assert_eq!((fa.forgotten_by, fa.content), (Some(it), None));
        // A later tombstone without erasure is recorded, and the erasure stays.
        let t2 = record(3, "x", "tombstone two", vec![]);
        let it2 = t2.entry.id();
        store
            .append(&[t2], &mut |_, _, _| {
                Ok(vec![Effect::Forget {
                    target: ia,
                    tombstone: it2,
                    erase: false,
                }])
            })
            .unwrap();
        let fa = store.entry_by_id(&ia).unwrap().unwrap();
        assert_eq!((fa.forgotten_by, fa.content), (Some(it2), None));
        assert_eq!(store.index_rows(0, 1).unwrap()[0].erased, Some(true));
        assert_eq!(
            store.entry_by_id(&ib).unwrap().unwrap().effective_label,
            Some(TrustLabel::External)
        );
        assert_eq!(store.search("vault", "x", 10).unwrap(), [1]);
    }

    #[test]
    fn search_is_scoped_and_ranked() {
        let store = MemoryStore::new();
        let recs = vec![
            record(0, "acme/bot", "rent is due", vec![]),
            record(1, "acme/bot/alice", "rent reminder rent", vec![]),
            record(2, "acme/botany", "rent of the greenhouse", vec![]),
            record(3, "other", "rent elsewhere", vec![]),
        ];
        store.append(&recs, &mut accept_all).unwrap();
        let mut hits = store.search("rent", "acme/bot", 10).unwrap();
        assert_eq!(hits.len(), 2, "scope and its descendants only: {hits:?}");
        hits.sort_unstable();
        assert_eq!(hits, [0, 1]);
        assert_eq!(store.search("RENT", "acme", 1).unwrap(), [1]);
        assert!(store.search("", "acme", 10).unwrap().is_empty());
    }

    #[test]
    fn control_records_and_index_copies() {
        let store = MemoryStore::new();
        let a = record(0, "x", "alpha", vec![]);
        let mut t = record(1, "x", "forget alpha", vec![]);
        // A control record by kind: re-sign the body as a tombstone.
        let mut body = t.entry.body().clone();
        body.kind = EntryKind::Tombstone;
        t.entry = SignedEntry::sign(body, &key()).unwrap();
        let (ia, it) = (a.entry.id(), t.entry.id());
        store.append(&[a], &mut accept_all).unwrap();
        store
            .append(&[t], &mut |_, _, _| {
                Ok(vec![Effect::Forget {
                    target: ia,
                    tombstone: it,
                    erase: true,
                }])
            })
            .unwrap();
        let tomb = store.control_records(EntryKind::Tombstone, 0).unwrap();
        assert_eq!(tomb.len(), 1);
        assert_eq!(
            (tomb[0].index, tomb[0].content.as_slice()),
            (1, &b"forget alpha"[..])
        );
        assert!(
            store
                .control_records(EntryKind::Tombstone, 2)
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .control_records(EntryKind::Distrust, 0)
                .unwrap()
                .is_empty()
        );
        // A content kind is found by scanning; an erased one is an integrity error.
        assert!(matches!(
            store.control_records(EntryKind::Observation, 0),
            Err(Error::Integrity(_))
        ));
        let rows = store.index_rows(0, 10).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[0].scope.as_str(),
                rows[0].writer.as_str(),
                rows[0].kind.as_str()
            ),
            ("x", "agent", "observation")
        );
        assert_eq!(
            (rows[0].label.as_str(), rows[0].erased),
            ("TRUSTED", Some(true))
        );
        assert_eq!((rows[1].kind.as_str(), rows[1].erased), ("tombstone", None));
        assert!(store.index_rows(5, 10).unwrap().is_empty());
    }

    #[test]
    fn registry_checkpoints_and_settings() {
        let store = MemoryStore::new();
        assert_eq!(store.setting("origin").unwrap(), None);
        store.set_setting("origin", "a").unwrap();
        store.set_setting("origin", "b").unwrap();
        assert_eq!(store.setting("origin").unwrap().as_deref(), Some("b"));
        assert_eq!(store.latest_checkpoint().unwrap(), None);
        store.save_checkpoint(5, "five").unwrap();
        store.save_checkpoint(2, "two").unwrap();
        store.save_checkpoint(5, "five again").unwrap();
        assert_eq!(
            store.latest_checkpoint().unwrap().as_deref(),
            Some("five again")
        );
        assert!(store.registry_records(0).unwrap().is_empty());
    }
}
