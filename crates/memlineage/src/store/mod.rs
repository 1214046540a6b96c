//! The storage backend behind the [`Memory`](crate::Memory) handle: a small trait in the manner
//! of redb's `StorageBackend`, so a PostgreSQL backend can follow without touching the handle.
//!
//! The store keeps bytes and indexes; it makes no trust decision. Everything it returns is
//! re-verified by the caller (signatures, leaves against the tree, labels), so a store that has
//! been edited behind the program's back is caught by `verify` and by retrieval.
//!
//! Two backends: [`SqliteStore`] (a file, durable) and [`MemoryStore`] (RAM only: tests,
//! benchmarks, short-lived agents).

mod index;
mod memory;
mod schema;
mod sqlite;

pub use index::IndexRow;

pub use memory::MemoryStore;
pub use sqlite::SqliteStore;

use crate::error::Error;
use memlineage_core::entry::{EntryKind, SignedEntry};
use memlineage_core::label::{TrustLabel, Weight};
use memlineage_core::merkle::NodeId;
use memlineage_core::{EntryId, Hash256};

/// One stored entry as read back: the raw leaf (decoded by the caller, so tampering surfaces as
/// a decode or verification error, never a panic), its content, and derived state.
#[derive(Clone, Debug)]
pub struct StoredEntry {
    /// Leaf index in the log.
    pub index: u64,
    /// The entry id as indexed (re-derived from the leaf by verifiers).
    pub id: EntryId,
    /// The canonical leaf bytes.
    pub leaf: Vec<u8>,
    /// The content bytes; `None` once erased.
    pub content: Option<Vec<u8>>,
    /// Set when a tombstone forgot this entry: the tombstone's id.
    pub forgotten_by: Option<EntryId>,
    /// The effective label, when a distrust record raised it above the signed label.
    pub effective_label: Option<TrustLabel>,
}

/// An entry's labels as the store keeps them, without its leaf: what the write path needs to
/// label a child ([`StoreRead::labels_by_id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryLabels {
    /// Leaf index in the log.
    pub index: u64,
    /// The entry's signed label (a backend may answer from its copy beside the leaf; `verify`
    /// compares that copy with the leaf).
    pub signed: TrustLabel,
    /// The effective label, when a distrust record raised it above the signed label.
    pub effective: Option<TrustLabel>,
}

impl EntryLabels {
    /// The label a child is labelled from: the signed label, raised by any distrust.
    pub fn effective_label(&self) -> TrustLabel {
        self.effective.map_or(self.signed, |e| e.max(self.signed))
    }
}

/// A new entry to append.
#[derive(Clone, Debug)]
pub struct NewRecord {
    /// The signed entry.
    pub entry: SignedEntry,
    /// Its content bytes.
    pub content: Vec<u8>,
    /// Text to index for full-text search (`None` for control records and binary content).
    pub search_text: Option<String>,
}

/// A registry or other control record as stored: its index, leaf and content.
#[derive(Clone, Debug)]
pub struct RegistryRecord {
    /// Leaf index.
    pub index: u64,
    /// The canonical leaf bytes.
    pub leaf: Vec<u8>,
    /// The content (the canonical registry change).
    pub content: Vec<u8>,
}

/// Derived state that a control record changes, applied in the same transaction as the append.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// A tombstone forgets `target` (and erases its content when `erase`).
    Forget {
        /// The forgotten entry.
        target: EntryId,
        /// The tombstone's id.
        tombstone: EntryId,
        /// Erase the content bytes too.
        erase: bool,
    },
    /// A distrust record raises the effective label of `id`.
    RaiseLabel {
        /// The entry.
        id: EntryId,
        /// Its new effective label.
        label: TrustLabel,
    },
}

/// Read access, both outside and inside a write transaction.
pub trait StoreRead {
    /// Number of leaves in the log.
    fn size(&self) -> Result<u64, Error>;
    /// An entry by id.
    fn entry_by_id(&self, id: &EntryId) -> Result<Option<StoredEntry>, Error>;
    /// An entry by leaf index.
    fn entry_by_index(&self, index: u64) -> Result<Option<StoredEntry>, Error>;
    /// Entries with index in `[start, start + limit)`, in index order.
    fn entries(&self, start: u64, limit: u64) -> Result<Vec<StoredEntry>, Error>;
    /// Hashes of complete Merkle subtrees, in the order asked. A missing node is an error.
    fn nodes(&self, ids: &[NodeId]) -> Result<Vec<Hash256>, Error>;
    /// Children of an entry (entries that list it as a parent), with the edge weights.
    fn children(&self, id: &EntryId) -> Result<Vec<(EntryId, Weight)>, Error>;
    /// Indices of entries written by `writer`.
    fn indices_by_writer(&self, writer: &str) -> Result<Vec<u64>, Error>;
    /// Registry records with index ≥ `from`, in log order.
    fn registry_records(&self, from: u64) -> Result<Vec<RegistryRecord>, Error>;
    /// The latest signed checkpoint note, if any.
    fn latest_checkpoint(&self) -> Result<Option<String>, Error>;
    /// Signed checkpoint notes of size at most `max_size`, largest first, at most `limit`: a
    /// reader that requires a witnessed checkpoint looks for the newest one its witnesses
    /// cosigned (`docs/merkle-and-checkpoints.md`).
    ///
    /// The provided implementation knows only the latest note; backends override it.
    fn checkpoint_notes(&self, max_size: u64, limit: usize) -> Result<Vec<(u64, String)>, Error> {
        let Some(note) = self.latest_checkpoint()? else {
            return Ok(Vec::new());
        };
        let size = memlineage_core::checkpoint::parse_note(&note)
            .ok()
            .and_then(|n| memlineage_core::checkpoint::Checkpoint::parse_body(&n.body).ok())
            .map(|cp| cp.size);
        Ok(match size {
            Some(s) if s <= max_size && limit > 0 => vec![(s, note)],
            _ => Vec::new(),
        })
    }
    /// Full-text search: indices of live entries in `scope` (or below), best match first.
    fn search(&self, query: &str, scope: &str, limit: usize) -> Result<Vec<u64>, Error>;
    /// A store setting.
    fn setting(&self, key: &str) -> Result<Option<String>, Error>;

    /// Entries by leaf index, in the order asked (`None`: no such entry): a retrieval reads
    /// all its results at once.
    ///
    /// The provided implementation reads them one by one; a backend that can read many in
    /// one query (the SQLite store: one statement, still one indexed lookup per entry)
    /// overrides it. It returns exactly what [`StoreRead::entry_by_index`] returns for each.
    fn entries_by_index(&self, indices: &[u64]) -> Result<Vec<Option<StoredEntry>>, Error> {
        indices.iter().map(|i| self.entry_by_index(*i)).collect()
    }

    /// Entries by id, in the order asked (`None`: no such entry): a retrieval reads all the
    /// parents of its results (for their signed labels), and a recall all its entries, at once.
    ///
    /// The provided implementation reads them one by one, as for
    /// [`StoreRead::entries_by_index`]; it returns exactly what [`StoreRead::entry_by_id`]
    /// returns for each.
    fn entries_by_id(&self, ids: &[EntryId]) -> Result<Vec<Option<StoredEntry>>, Error> {
        ids.iter().map(|id| self.entry_by_id(id)).collect()
    }

    /// The copies of signed fields this store keeps beside the leaves with index in
    /// `[start, start + limit)`, in index order, for the audit to compare with the leaves.
    ///
    /// The provided implementation is for backends that keep no separate copies: it reads them
    /// out of the leaves themselves. A backend that filters or looks up by a copy (as the
    /// SQLite store filters search by its `scope` column) overrides it to return that copy.
    fn index_rows(&self, start: u64, limit: u64) -> Result<Vec<IndexRow>, Error> {
        index::rows_from_leaves(&self.entries(start, limit)?)
    }

    /// Control records of `kind` with index ≥ `from`, in log order: the distrust records that
    /// retrieval and the write path replay (DESIGN.md: the log is the source of truth).
    ///
    /// The provided implementation scans the log from `from`, decoding every leaf; a backend
    /// with an index by kind overrides it. A record whose leaf does not decode, or whose
    /// content is gone, is an integrity error (control records are never erasable).
    fn control_records(&self, kind: EntryKind, from: u64) -> Result<Vec<RegistryRecord>, Error> {
        index::scan_control_records(self, kind, from)
    }

    /// An entry's index, signed label and effective label by id, without reading its leaf or
    /// content: the write path labels every child from its parents' effective labels, and a
    /// strict decode of each parent's whole leaf (≈ 3 µs) just to read one signed field was a
    /// tenth of a write.
    ///
    /// The provided implementation reads the entry and decodes its leaf. A backend that keeps
    /// a copy of the signed label beside the leaf (the SQLite `label` column, `MemoryStore`'s
    /// rows) overrides it to answer from that copy. This is no weaker than decoding the leaf:
    /// the write path never re-verified the parent's leaf either (it trusts its own store), and
    /// a child labelled from an edited copy is caught the same way as one labelled from an
    /// edited leaf — `verify` compares every copy with its signed leaf and re-derives every
    /// child's label from its parents' *signed* labels, and retrieval re-checks each returned
    /// entry's label against its parents' signed leaves.
    fn labels_by_id(&self, id: &EntryId) -> Result<Option<EntryLabels>, Error> {
        let Some(stored) = self.entry_by_id(id)? else {
            return Ok(None);
        };
        let entry = SignedEntry::from_leaf(&stored.leaf)?;
        Ok(Some(EntryLabels {
            index: stored.index,
            signed: entry.body().label,
            effective: stored.effective_label,
        }))
    }

    /// The stored weight of each derivation edge `(parent, child)` asked for, in the order
    /// asked (`None`: no such edge): `verify` looks up every edge the signed parent lists
    /// imply, a chunk at a time, instead of holding every entry's children in memory.
    ///
    /// The provided implementation reads each parent's children.
    fn edge_weights(&self, edges: &[(EntryId, EntryId)]) -> Result<Vec<Option<Weight>>, Error> {
        edges
            .iter()
            .map(|(parent, child)| {
                Ok(self
                    .children(parent)?
                    .into_iter()
                    .find(|(c, _)| c == child)
                    .map(|(_, w)| w))
            })
            .collect()
    }

    /// How many derivation edges the store holds, when it can count them (`None`: it
    /// cannot, and `verify` compares the edges parent by parent instead). With every edge
    /// the signed parent lists imply found by [`StoreRead::edge_weights`], an equal count
    /// means there is no other.
    fn edge_count(&self) -> Result<Option<u64>, Error> {
        Ok(None)
    }
}

/// A guard run inside the write transaction, after the store has fixed the index of the first
/// new record: it validates the batch against the current state and returns the effects.
pub type AppendGuard<'a> =
    dyn FnMut(&dyn StoreRead, u64, &[NewRecord]) -> Result<Vec<Effect>, Error> + 'a;

/// A storage backend.
pub trait Store: StoreRead + Send + Sync {
    /// Appends `records` atomically and durably (one transaction, one fsync: group commit).
    /// `guard` runs inside the transaction; if it fails nothing is written.
    /// Returns the index of the first record.
    fn append(&self, records: &[NewRecord], guard: &mut AppendGuard<'_>) -> Result<u64, Error>;
    /// Saves a signed checkpoint note for tree size `size`.
    fn save_checkpoint(&self, size: u64, note: &str) -> Result<(), Error>;
    /// Sets a store setting (only at initialisation).
    fn set_setting(&self, key: &str, value: &str) -> Result<(), Error>;
}
