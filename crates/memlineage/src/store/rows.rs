//! The rows a backend stores and reads back.
//!
//! What is written is computed once, by the handle, for every backend ([`AppendBatch`]): the
//! leaves and their content, every Merkle node the batch completes, the lineage edges, the
//! copies of signed fields the indexes use, and the derived state that control records change
//! (forgotten entries, raised effective labels). A backend stores these bytes as they come and
//! decides nothing. What is read back ([`StoredEntry`] and friends) is raw: the handle decodes
//! and re-verifies it, so a store edited behind the program's back is caught.

use super::text::TermCounts;
use memlineage_core::entry::{EntryKind, SignedEntry};
use memlineage_core::gate::ValueKey;
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
/// label a child ([`BackendRead::labels_by_id`](super::BackendRead::labels_by_id)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryLabels {
    /// Leaf index in the log.
    pub index: u64,
    /// The entry's signed label (from the copy beside the leaf; `verify` compares that copy
    /// with the leaf).
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

/// A control record (registry change, tombstone, distrust, gate decision) as stored: its index,
/// leaf and content.
#[derive(Clone, Debug)]
pub struct ControlRecord {
    /// Leaf index.
    pub index: u64,
    /// The canonical leaf bytes.
    pub leaf: Vec<u8>,
    /// The content (the canonical record).
    pub content: Vec<u8>,
}

/// The copies of signed fields a store keeps beside one leaf for its queries. `verify` compares
/// every one of them with the signed body (`docs/store.md`, "What `verify` checks").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexRow {
    /// Leaf index.
    pub index: u64,
    /// The scope the store filters searches by.
    pub scope: String,
    /// The writer the store looks entries up by (`distrust --principal`).
    pub writer: String,
    /// The kind the store finds registry and distrust records by.
    pub kind: String,
    /// The copy of the signed label.
    pub label: String,
    /// The erased flag of the store's forgotten-entry row, when it has one for this entry.
    pub erased: Option<bool>,
}

/// A signed entry to append, with its content.
#[derive(Clone, Debug)]
pub struct NewRecord {
    /// The signed entry.
    pub entry: SignedEntry,
    /// Its content bytes.
    pub content: Vec<u8>,
    /// Text to index for full-text search (`None` for control records and binary content).
    pub search_text: Option<String>,
}

/// Everything one append writes, computed by the handle inside the backend's transaction (the
/// [`AppendGuard`](super::AppendGuard) returns it). A backend writes all of it or nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppendBatch {
    /// The leaf index of the first entry (the log's size when the transaction began).
    pub first: u64,
    /// The new leaves, in index order from `first`.
    pub entries: Vec<EntryRow>,
    /// Every Merkle node the batch completes, leaf hashes included, in the order completed
    /// (within a level, ascending index).
    pub nodes: Vec<(NodeId, Hash256)>,
    /// The lineage edges of the new entries.
    pub edges: Vec<EdgeRow>,
    /// Forgotten-entry rows to put (insert or replace), in order: the last row for a target
    /// wins.
    pub forgotten: Vec<ForgottenRow>,
    /// Effective labels to put (insert or replace), in order.
    pub raised: Vec<(EntryId, TrustLabel)>,
    /// Store settings to record: only in the batch that holds the genesis record.
    pub settings: Vec<(String, String)>,
}

/// One new leaf with its content and the copies of its signed fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryRow {
    /// Leaf index.
    pub index: u64,
    /// Entry id (SHA-256 of the canonical body).
    pub id: EntryId,
    /// The canonical leaf.
    pub leaf: Vec<u8>,
    /// Copy of the signed scope.
    pub scope: String,
    /// Copy of the signed writer.
    pub writer: String,
    /// Copy of the signed kind.
    pub kind: EntryKind,
    /// Copy of the signed label.
    pub label: TrustLabel,
    /// The content bytes.
    pub content: Vec<u8>,
    /// Text for the full-text index (`None`: not indexed).
    pub search_text: Option<String>,
    /// The terms of `search_text`, counted before the append's transaction when the backend
    /// indexes terms itself ([`Backend::counts_terms`](super::Backend::counts_terms)); `None`
    /// otherwise (such a backend then counts them from `search_text`).
    pub terms: Option<TermCounts>,
    /// The keys of the typed values the text carries, sorted, for the value index (issue 19,
    /// `docs/store.md`, "Value index"); kept after the content is erased.
    pub values: Vec<ValueKey>,
}

/// One lineage edge, parent → child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeRow {
    /// The parent.
    pub parent: EntryId,
    /// The child (a new entry).
    pub child: EntryId,
    /// The child's leaf index.
    pub child_index: u64,
    /// The attribution weight.
    pub weight: Weight,
}

/// The forgotten-entry row of a target after a tombstone: the row to put, final (the handle
/// has applied the rule that erasure is sticky). When `erased`, the backend also drops the
/// target's content; in every case it drops the target from the full-text index and its stored embeddings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForgottenRow {
    /// The forgotten entry.
    pub target: EntryId,
    /// Its leaf index.
    pub target_index: u64,
    /// The latest tombstone naming it.
    pub tombstone: EntryId,
    /// Whether its content is erased.
    pub erased: bool,
}

/// A stored checkpoint note as read back ([`BackendRead::checkpoint_notes`]): raw, so the
/// handle opens and checks it before trusting it. (Not a [`NoteRow`], which only the handle
/// makes: a note read back cannot be saved into another store.)
///
/// [`BackendRead::checkpoint_notes`]: super::BackendRead::checkpoint_notes
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredNote {
    /// The tree size it was saved under.
    pub size: u64,
    /// The note text, with every signature line it was saved with.
    pub note: String,
}

/// A signed checkpoint note to keep, made by the handle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoteRow {
    size: u64,
    note: String,
}

impl NoteRow {
    pub(crate) fn new(size: u64, note: String) -> NoteRow {
        NoteRow { size, note }
    }

    /// The tree size the note signs.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The note text (C2SP signed note).
    pub fn note(&self) -> &str {
        &self.note
    }
}

/// A stored embedding of one entry's content: a derived row, never signed, recomputable from
/// the content with the model (`docs/retrieval.md`, "Stored embeddings"). The handle writes it
/// after the entry is logged and checks `binding` against the entry's signed id and content
/// hash before it uses the vector; a backend only stores and returns the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddingRow {
    /// Leaf index of the entry.
    pub index: u64,
    /// The model's id (`all-MiniLM-L6-v2@53aa51172d14`): vectors of different models never mix.
    pub model: String,
    /// The components, little-endian IEEE 754 single floats.
    pub vector: Vec<u8>,
    /// SHA-256 binding the vector to the model, the entry id and its content hash (computed by
    /// the handle, `search/stored.rs`).
    pub binding: Hash256,
}

/// Rows for the value index made by the handle when it fills the index of an existing store
/// ([`Backend::save_values`](super::Backend::save_values)): `(key, leaf index)` pairs, and the
/// completeness marker (a setting) when the handle has indexed the whole log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueRows {
    rows: Vec<(ValueKey, u64)>,
    marker: Option<(String, String)>,
}

impl ValueRows {
    pub(crate) fn new(rows: Vec<(ValueKey, u64)>, marker: Option<(String, String)>) -> ValueRows {
        ValueRows { rows, marker }
    }

    /// The `(key, leaf index)` rows.
    pub fn rows(&self) -> &[(ValueKey, u64)] {
        &self.rows
    }

    /// The setting to record once the rows are in: `(key, value)`.
    pub fn marker(&self) -> Option<(&str, &str)> {
        self.marker.as_ref().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// What one checkpoint of a write-ahead log did ([`Backend::checkpoint_wal`](super::Backend::checkpoint_wal)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalCheckpoint {
    /// Another checkpoint held the log: this one did nothing.
    pub busy: bool,
    /// Pages (frames) in the log.
    pub wal_pages: u64,
    /// Of those, pages now in the database file (the others are still needed by a reader, or
    /// were committed during the checkpoint: the next one takes them).
    pub checkpointed_pages: u64,
}

/// What one step of full-text indexing did ([`Backend::index_full_text`](super::Backend::index_full_text)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FullTextProgress {
    /// Entries that this step moved into the index (those with no searchable text included).
    pub indexed: u64,
    /// Entries still pending after it.
    pub pending: u64,
}
