//! The backend traits: reads ([`BackendRead`]), full-text search ([`TextIndex`]) and the two
//! writes ([`Backend::append`], [`Backend::save_checkpoint`]).
//!
//! In the manner of redb's `StorageBackend`, a backend is about persistence only: it stores the
//! bytes the handle computed and reads them back. It makes no trust decision and derives
//! nothing: the Merkle nodes, lineage edges, index copies, forgotten rows and effective labels
//! of an append arrive computed, in an [`AppendBatch`] ([`AppendGuard::run`]).
//!
//! **Only the handle writes.** [`Backend::append`] takes an [`AppendGuard`], which only this
//! crate can make (the [`Memory`](crate::Memory) handle, with its signature, registry and label
//! checks inside); [`Backend::save_checkpoint`] takes a [`NoteRow`], which only the handle
//! makes. Holding a backend therefore gives no way to append, relabel or delete without the
//! handle's checks. (The `unchecked-store-access` feature opens one, for the evaluation, the
//! benchmarks and tamper tests; it is not for production.)
//!
//! **Read-only opens.** A backend opened with [`OpenMode::ReadOnly`](super::OpenMode) (a
//! monitor follows a log that way, with no means to change it) says so
//! ([`Backend::read_only`]) and refuses both writes; the SQLite store opens its file with
//! `SQLITE_OPEN_READ_ONLY`, so not even a bug in this crate could write through it.

use super::rows::{
    AppendBatch, ControlRecord, EdgeRow, EmbeddingRow, EntryLabels, FullTextProgress, IndexRow,
    NoteRow, StoredEntry, StoredNote, ValueRows, WalCheckpoint,
};
use super::text::SearchTerms;
use crate::error::Error;
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::gate::ValueKey;
use memlineage_core::label::Weight;
use memlineage_core::merkle::NodeId;
use memlineage_core::{EntryId, Hash256};

/// Calls `$callback! { PREFIX METHODS }` with every method of [`BackendRead`] (but
/// `text_index`) as `name(args) -> return;`, so that each backend's forwarding impls (a store
/// to its reader, a snapshot to its transaction) list them once, here, beside the trait: a
/// method added to the trait is forwarded by every backend. The types are resolved where the
/// callback expands.
macro_rules! forward_reads {
    ($callback:ident! { $($prefix:tt)* }) => {
        $callback! { $($prefix)*
            size() -> Result<u64, Error>;
            entries(start: u64, limit: u64) -> Result<Vec<StoredEntry>, Error>;
            entries_by_index(indices: &[u64]) -> Result<Vec<Option<StoredEntry>>, Error>;
            entries_by_id(ids: &[EntryId]) -> Result<Vec<Option<StoredEntry>>, Error>;
            entry_by_index(index: u64) -> Result<Option<StoredEntry>, Error>;
            entry_by_id(id: &EntryId) -> Result<Option<StoredEntry>, Error>;
            ids_from(from: &EntryId, limit: usize) -> Result<Vec<EntryId>, Error>;
            nodes(ids: &[NodeId]) -> Result<Vec<Hash256>, Error>;
            children(id: &EntryId) -> Result<Vec<(EntryId, Weight)>, Error>;
            edge_weights(edges: &[(EntryId, EntryId)]) -> Result<Vec<Option<Weight>>, Error>;
            edge_count() -> Result<Option<u64>, Error>;
            indices_by_writer(writer: &str) -> Result<Vec<u64>, Error>;
            control_records(kind: EntryKind, from: u64) -> Result<Vec<ControlRecord>, Error>;
            labels_by_id(id: &EntryId) -> Result<Option<EntryLabels>, Error>;
            labels_by_ids(ids: &[EntryId]) -> Result<Vec<Option<EntryLabels>>, Error>;
            index_rows(start: u64, limit: u64) -> Result<Vec<IndexRow>, Error>;
            latest_checkpoint() -> Result<Option<String>, Error>;
            checkpoint_notes(max_size: u64, limit: usize) -> Result<Vec<StoredNote>, Error>;
            setting(key: &str) -> Result<Option<String>, Error>;
            embeddings(model: &str, start: u64, limit: u64) -> Result<Vec<EmbeddingRow>, Error>;
            embedding_models() -> Result<Vec<String>, Error>;
            value_carriers(key: &ValueKey, from: u64, limit: usize) -> Result<Vec<u64>, Error>;
        }
    };
}
pub(crate) use forward_reads;

/// Read access to the stored log: outside a transaction (each call on its own), inside a read
/// snapshot ([`Backend::snapshot`]), and inside the append transaction (what the guard reads).
///
/// Every answer is raw: the handle re-verifies what it uses.
pub trait BackendRead {
    /// Number of leaves in the log (one past the highest index).
    fn size(&self) -> Result<u64, Error>;

    /// Entries with index in `[start, start + limit)`, in index order.
    fn entries(&self, start: u64, limit: u64) -> Result<Vec<StoredEntry>, Error>;

    /// Entries by leaf index, in the order asked (`None`: no such entry; duplicates allowed).
    fn entries_by_index(&self, indices: &[u64]) -> Result<Vec<Option<StoredEntry>>, Error>;

    /// Entries by id, in the order asked (`None`: no such entry; duplicates allowed).
    fn entries_by_id(&self, ids: &[EntryId]) -> Result<Vec<Option<StoredEntry>>, Error>;

    /// The entry at `index`. Provided: one [`BackendRead::entries_by_index`].
    fn entry_by_index(&self, index: u64) -> Result<Option<StoredEntry>, Error> {
        Ok(self.entries_by_index(&[index])?.pop().flatten())
    }

    /// The entry with `id`. Provided: one [`BackendRead::entries_by_id`].
    fn entry_by_id(&self, id: &EntryId) -> Result<Option<StoredEntry>, Error> {
        Ok(self
            .entries_by_id(std::slice::from_ref(id))?
            .pop()
            .flatten())
    }

    /// At most `limit` entry ids `≥ from`, ascending: an indexed range read, which resolves an
    /// id prefix ([`Memory::resolve_prefix`](crate::Memory::resolve_prefix)).
    fn ids_from(&self, from: &EntryId, limit: usize) -> Result<Vec<EntryId>, Error>;

    /// Hashes of complete Merkle subtrees, in the order asked. A missing node is an integrity
    /// error naming it.
    fn nodes(&self, ids: &[NodeId]) -> Result<Vec<Hash256>, Error>;

    /// Children of an entry (entries that list it as a parent) with the edge weights, sorted by
    /// child id.
    fn children(&self, id: &EntryId) -> Result<Vec<(EntryId, Weight)>, Error>;

    /// The stored weight of each edge `(parent, child)` asked for, in order (`None`: no such
    /// edge). Provided: each parent's children.
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

    /// How many edges the store holds, when it can count them (`None`: `verify` then compares
    /// the edges parent by parent).
    fn edge_count(&self) -> Result<Option<u64>, Error> {
        Ok(None)
    }

    /// Leaf indices of the entries whose `writer` copy is `writer`, ascending.
    fn indices_by_writer(&self, writer: &str) -> Result<Vec<u64>, Error>;

    /// Records whose `kind` copy is `kind`, with index ≥ `from`, in log order. A record whose
    /// content is gone is an integrity error (control records are never erased).
    fn control_records(&self, kind: EntryKind, from: u64) -> Result<Vec<ControlRecord>, Error>;

    /// An entry's index, signed label (its copy) and effective label, without its leaf.
    fn labels_by_id(&self, id: &EntryId) -> Result<Option<EntryLabels>, Error>;

    /// [`BackendRead::labels_by_id`] of each of `ids`, in their order (`None`: not in the
    /// log). A write labels each new entry from its parents' labels; a backend across a
    /// network (PostgreSQL) answers the batch's parents in one round trip instead of one each.
    fn labels_by_ids(&self, ids: &[EntryId]) -> Result<Vec<Option<EntryLabels>>, Error> {
        ids.iter().map(|id| self.labels_by_id(id)).collect()
    }

    /// The copies of signed fields kept beside the leaves with index in `[start, start +
    /// limit)`, in index order, for the audit to compare with the leaves.
    fn index_rows(&self, start: u64, limit: u64) -> Result<Vec<IndexRow>, Error>;

    /// The latest signed checkpoint note (of the largest size), if any.
    fn latest_checkpoint(&self) -> Result<Option<String>, Error>;

    /// The stored checkpoint notes of size at most `max_size`, largest first, at most `limit`
    /// of them: a reader that requires witnesses looks for the newest checkpoint their
    /// cosignatures meet its policy on, and a log asks each witness from the newest size it
    /// cosigned (`docs/merkle-and-checkpoints.md`, "Witnesses").
    fn checkpoint_notes(&self, max_size: u64, limit: usize) -> Result<Vec<StoredNote>, Error>;

    /// A store setting.
    fn setting(&self, key: &str) -> Result<Option<String>, Error>;

    /// The full-text index over the live content entries.
    fn text_index(&self) -> &dyn TextIndex;

    /// The stored embeddings of `model` for entries with index in `[start, start + limit)`,
    /// in index order (`docs/retrieval.md`, "Stored embeddings"). Raw rows: the handle checks
    /// each one's binding to its entry before it uses the vector. Provided: none (a backend
    /// without an embeddings table; the handle then embeds the content again).
    fn embeddings(&self, model: &str, start: u64, limit: u64) -> Result<Vec<EmbeddingRow>, Error> {
        let _ = (model, start, limit);
        Ok(Vec::new())
    }

    /// The models of the stored embeddings, sorted, each once (`verify` audits each model's
    /// rows). Provided: none (a backend without an embeddings table).
    fn embedding_models(&self) -> Result<Vec<String>, Error> {
        Ok(Vec::new())
    }

    /// The leaf indices of the entries the value index holds under `key` (entries whose
    /// content carried the value when it was logged, erased ones included), with index ≥
    /// `from`, ascending, at most `limit` (issue 19, `docs/store.md`, "Value index"). Raw: the
    /// handle reads and verifies the entries, and checks that a live one carries the value.
    /// Required: a backend without the index would let an omitted lineage edge launder a value.
    fn value_carriers(&self, key: &ValueKey, from: u64, limit: usize) -> Result<Vec<u64>, Error>;
}

/// A reference reads what it refers to (a wrapper can hand itself out as its snapshot).
impl<T: BackendRead + ?Sized> BackendRead for &T {
    fn size(&self) -> Result<u64, Error> {
        (**self).size()
    }
    fn entries(&self, start: u64, limit: u64) -> Result<Vec<StoredEntry>, Error> {
        (**self).entries(start, limit)
    }
    fn entries_by_index(&self, indices: &[u64]) -> Result<Vec<Option<StoredEntry>>, Error> {
        (**self).entries_by_index(indices)
    }
    fn entries_by_id(&self, ids: &[EntryId]) -> Result<Vec<Option<StoredEntry>>, Error> {
        (**self).entries_by_id(ids)
    }
    fn entry_by_index(&self, index: u64) -> Result<Option<StoredEntry>, Error> {
        (**self).entry_by_index(index)
    }
    fn entry_by_id(&self, id: &EntryId) -> Result<Option<StoredEntry>, Error> {
        (**self).entry_by_id(id)
    }
    fn ids_from(&self, from: &EntryId, limit: usize) -> Result<Vec<EntryId>, Error> {
        (**self).ids_from(from, limit)
    }
    fn nodes(&self, ids: &[NodeId]) -> Result<Vec<Hash256>, Error> {
        (**self).nodes(ids)
    }
    fn children(&self, id: &EntryId) -> Result<Vec<(EntryId, Weight)>, Error> {
        (**self).children(id)
    }
    fn edge_weights(&self, edges: &[(EntryId, EntryId)]) -> Result<Vec<Option<Weight>>, Error> {
        (**self).edge_weights(edges)
    }
    fn edge_count(&self) -> Result<Option<u64>, Error> {
        (**self).edge_count()
    }
    fn indices_by_writer(&self, writer: &str) -> Result<Vec<u64>, Error> {
        (**self).indices_by_writer(writer)
    }
    fn control_records(&self, kind: EntryKind, from: u64) -> Result<Vec<ControlRecord>, Error> {
        (**self).control_records(kind, from)
    }
    fn labels_by_id(&self, id: &EntryId) -> Result<Option<EntryLabels>, Error> {
        (**self).labels_by_id(id)
    }
    fn labels_by_ids(&self, ids: &[EntryId]) -> Result<Vec<Option<EntryLabels>>, Error> {
        (**self).labels_by_ids(ids)
    }
    fn index_rows(&self, start: u64, limit: u64) -> Result<Vec<IndexRow>, Error> {
        (**self).index_rows(start, limit)
    }
    fn latest_checkpoint(&self) -> Result<Option<String>, Error> {
        (**self).latest_checkpoint()
    }
    fn checkpoint_notes(&self, max_size: u64, limit: usize) -> Result<Vec<StoredNote>, Error> {
        (**self).checkpoint_notes(max_size, limit)
    }
    fn setting(&self, key: &str) -> Result<Option<String>, Error> {
        (**self).setting(key)
    }
    fn text_index(&self) -> &dyn TextIndex {
        (**self).text_index()
    }
    fn embeddings(&self, model: &str, start: u64, limit: u64) -> Result<Vec<EmbeddingRow>, Error> {
        (**self).embeddings(model, start, limit)
    }
    fn embedding_models(&self) -> Result<Vec<String>, Error> {
        (**self).embedding_models()
    }
    fn value_carriers(&self, key: &ValueKey, from: u64, limit: usize) -> Result<Vec<u64>, Error> {
        (**self).value_carriers(key, from, limit)
    }
}

/// The full-text index a backend keeps beside the log, written in the append transaction (the
/// [`EntryRow::search_text`](super::EntryRow::search_text) of new entries; forgotten entries
/// removed) and queried here. SQLite: FTS5; in memory: an inverted index; both BM25.
pub trait TextIndex {
    /// Indices of the `limit` best live matches of `terms` (any term matches) whose `scope`
    /// copy is `scope` or lies below it, best first, ties by leaf index.
    fn search(&self, terms: &SearchTerms, scope: &Scope, limit: usize) -> Result<Vec<u64>, Error>;
}

/// A storage backend: the reads of [`BackendRead`] (each call on its own), a consistent read
/// snapshot, and the two writes.
pub trait Backend: BackendRead + Send + Sync {
    /// The backend's name: `sqlite`, `memory`, `postgres`.
    fn name(&self) -> &'static str;

    /// Where the store is, for messages (`sqlite:/path/store.db`, `memory:`); no secrets.
    fn location(&self) -> String;

    /// A consistent view of the log: one read transaction for several reads (a retrieval
    /// reads through one). Do not append while holding it on the same thread: a backend with
    /// one connection would wait for itself.
    fn snapshot(&self) -> Result<Box<dyn BackendRead + '_>, Error>;

    /// Appends one batch atomically and durably (group commit: one transaction, one sync).
    ///
    /// Inside its write transaction, the backend fixes the index of the first new entry (the
    /// log's size: concurrent appends never interleave), calls [`AppendGuard::run`] with a
    /// reader of the transaction, writes the [`AppendBatch`] it returns — calling
    /// [`AppendGuard::reached`] after each [`WriteStage`] — and commits. If the guard, a stage
    /// or the commit fails, nothing is written. Returns the index of the first entry.
    fn append(&self, guard: &mut AppendGuard<'_>) -> Result<u64, Error>;

    /// Keeps a signed checkpoint note (replacing one of the same size).
    fn save_checkpoint(&self, note: &NoteRow) -> Result<(), Error>;

    /// Whether this backend value was opened read-only ([`OpenMode::ReadOnly`]: a monitor, an
    /// auditor). Then [`Backend::append`] and [`Backend::save_checkpoint`] fail with
    /// [`StoreState::ReadOnly`] and write nothing, and the handle signs no checkpoint through
    /// it; the reads are those of any other open.
    ///
    /// [`OpenMode::ReadOnly`]: super::OpenMode::ReadOnly
    /// [`StoreState::ReadOnly`]: crate::error::StoreState::ReadOnly
    fn read_only(&self) -> bool;

    /// Drops whatever the backend remembers of what it read (SQLite: its copy of the value
    /// index's tail), so that the next reads see the stored tables as they are now — what an
    /// audit checks, and what [`Memory::forget_verified`](crate::Memory::forget_verified)
    /// promises. Provided: nothing is remembered.
    fn forget_cached(&self) {}

    /// Keeps embeddings (insert or replace by index and model), in one transaction. A row for
    /// an entry that is not in the log or that a tombstone has forgotten is not kept (checked
    /// inside the transaction, so an embedding computed before a concurrent tombstone never
    /// outlives it). Derived data: the handle writes it after the entry is logged, and embeds
    /// again whatever is missing. Provided: nothing is kept.
    fn save_embeddings(&self, rows: &[EmbeddingRow]) -> Result<(), Error> {
        let _ = rows;
        Ok(())
    }

    /// Adds rows to the value index, and records its completeness marker when `rows` carries
    /// one, in one transaction: how the handle fills the index of a store made before it
    /// existed (`Memory::open`). Only the handle makes [`ValueRows`]. Appends index their own
    /// entries ([`EntryRow::values`](super::EntryRow::values)).
    fn save_values(&self, rows: &ValueRows) -> Result<(), Error>;

    /// Whether this backend indexes the handle's terms of each entry's text itself (the
    /// [`EntryRow::terms`](super::EntryRow::terms) it is given), rather than the text: then the
    /// handle counts them before the append's transaction, so that they are not counted while
    /// the log is locked. Provided: no (SQLite's FTS5 and the in-memory index take the text).
    fn counts_terms(&self) -> bool {
        false
    }

    /// Write transactions committed through this backend value, when it counts them (each is
    /// one sync on a durable backend): how group commit shows.
    fn commits(&self) -> Option<u64> {
        None
    }

    /// Leaves the write-ahead log's checkpoints to the owner, who runs
    /// [`Backend::checkpoint_wal`] on a thread of its own, so that no commit waits for one
    /// (the SQLite file store: `docs/store.md`, "Checkpoints"). A backend that defers keeps a
    /// safety net: commits checkpoint again if the owner falls far behind. Returns whether it
    /// defers. Provided: no (nothing to checkpoint, or the server does it).
    fn defer_wal_checkpoints(&self) -> Result<bool, Error> {
        Ok(false)
    }

    /// Leaves the full-text indexing of new entries to [`Backend::index_full_text`], which the
    /// owner runs on a thread of its own, so that no commit indexes text (the SQLite store:
    /// FTS5 writes a segment per commit, `docs/store.md`, "Full-text index"). Until an entry is
    /// indexed its text is *pending*: a search through a handle without its own lexical index
    /// first indexes what is pending ([`Memory::search`](crate::Memory::search)). Returns
    /// whether it defers. Provided: no (the backend indexes in the append).
    fn defer_full_text(&self) -> Result<bool, Error> {
        Ok(false)
    }

    /// Indexes up to `max` entries whose full text is pending, oldest first, in one write
    /// transaction (none when nothing is pending), and says how many are left. A store opened
    /// read-only indexes nothing. Provided: nothing is ever pending.
    fn index_full_text(&self, max: usize) -> Result<FullTextProgress, Error> {
        let _ = max;
        Ok(FullTextProgress::default())
    }

    /// Keeps, from now on, a filter of the ids already in the log in memory, so that an
    /// append proves a new id absent without reading the id index (the SQLite store: its
    /// `entry_ids`, `docs/store.md`, "Id index"). Built here, from the index, at about 6 to
    /// 12 bytes per logged entry: for a long-lived writer such as the service, before it takes
    /// requests. Returns what it holds; `None` when the backend keeps none. Provided: `None`.
    fn keep_logged_ids(&self) -> Result<Option<LoggedIdsSummary>, Error> {
        Ok(None)
    }

    /// Copies committed pages of the write-ahead log into the database file without blocking
    /// writers or readers; `None` when the backend has no such log. Provided: `None`.
    fn checkpoint_wal(&self) -> Result<Option<WalCheckpoint>, Error> {
        Ok(None)
    }
}

/// What a backend's filter of logged ids holds ([`Backend::keep_logged_ids`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoggedIdsSummary {
    /// Distinct id prefixes held (fewer than the ids when two share one).
    pub prefixes: u64,
    /// Every entry below this index is covered.
    pub covered: u64,
    /// Bytes the filter takes, about.
    pub bytes: u64,
}

/// The points of an append at which a backend calls [`AppendGuard::reached`], in order. A
/// fault-injecting wrapper fails the append there (`tests/store_faults.rs`): an error at any
/// stage must leave the store exactly as before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WriteStage {
    /// The leaves, their content and their full-text documents (or, on a store that defers
    /// them, the mark of what is pending: [`Backend::defer_full_text`]) and the settings of a
    /// genesis batch are written.
    Entries,
    /// The Merkle nodes are written.
    Nodes,
    /// The edges, forgotten rows and effective labels are written (and the stored embeddings
    /// of forgotten entries deleted).
    Derived,
    /// Everything is written; the commit comes next.
    Commit,
}

impl WriteStage {
    /// Every stage, in order.
    pub const ALL: [WriteStage; 4] = [
        WriteStage::Entries,
        WriteStage::Nodes,
        WriteStage::Derived,
        WriteStage::Commit,
    ];
}

/// The closure an append runs inside the transaction.
pub(crate) type GuardFn<'a> = dyn FnMut(&dyn BackendRead, u64) -> Result<AppendBatch, Error> + 'a;
/// The closure called at each write stage.
pub(crate) type StageFn<'a> = dyn FnMut(WriteStage) -> Result<(), Error> + 'a;

/// The handle's side of an append: its checks, run inside the backend's write transaction,
/// and what they computed to write. Only this crate makes one.
pub struct AppendGuard<'a> {
    check: &'a mut GuardFn<'a>,
    stages: Option<&'a mut StageFn<'a>>,
    early_edges: &'a [EdgeRow],
}

impl<'a> AppendGuard<'a> {
    pub(crate) fn new(check: &'a mut GuardFn<'a>) -> AppendGuard<'a> {
        AppendGuard {
            check,
            stages: None,
            early_edges: &[],
        }
    }

    /// The same checks; the batch's lineage edges are known before the transaction
    /// ([`AppendGuard::early_edges`]).
    pub(crate) fn with_early_edges(mut self, edges: &'a [EdgeRow]) -> AppendGuard<'a> {
        self.early_edges = edges;
        self
    }

    /// The lineage edges of the batch the guard will build, when the handle knew them before
    /// the transaction (they do not depend on the batch's position in the log): a backend whose
    /// appends serialise on a lock may write them inside its transaction *before* it takes the
    /// lock, so that the lock is held for less. Their `child_index` is the child's offset in
    /// the batch, not its leaf index. Empty when unknown: the batch's own edges are then the
    /// ones to write. A backend that writes these must check that the batch's edges are the
    /// same ([`AppendGuard::same_edges`]) and otherwise fail the append.
    pub fn early_edges(&self) -> &'a [EdgeRow] {
        self.early_edges
    }

    /// Whether `batch`'s edges are the early ones (parent, child and weight, in order).
    pub fn same_edges(&self, batch: &AppendBatch) -> bool {
        batch.edges.len() == self.early_edges.len()
            && batch
                .edges
                .iter()
                .zip(self.early_edges)
                .all(|(a, b)| a.parent == b.parent && a.child == b.child && a.weight == b.weight)
    }

    /// The same checks, with `stages` called at each write stage (fault injection).
    #[cfg_attr(not(feature = "unchecked-store-access"), allow(dead_code))]
    pub(crate) fn with_stages(mut self, stages: &'a mut StageFn<'a>) -> AppendGuard<'a> {
        self.stages = Some(stages);
        self
    }

    /// Runs the handle's checks against the transaction's state, the first new entry to be
    /// logged at `first`, and returns the rows to write. An error aborts the append. A backend
    /// that retries its transaction (a serialization failure) runs the guard again.
    pub fn run(&mut self, txn: &dyn BackendRead, first: u64) -> Result<AppendBatch, Error> {
        let batch = (self.check)(txn, first)?;
        if batch.first != first || batch.entries.first().is_some_and(|e| e.index != first) {
            return Err(Error::internal(format!(
                "the append guard built a batch for index {} in a transaction at index {first}",
                batch.first
            )));
        }
        Ok(batch)
    }

    /// Called by the backend when it has written `stage`; an error aborts the append.
    pub fn reached(&mut self, stage: WriteStage) -> Result<(), Error> {
        match self.stages.as_mut() {
            Some(f) => f(stage),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(parent: &[u8], child: &[u8], bp: u16) -> EdgeRow {
        EdgeRow {
            parent: EntryId(Hash256::of(parent)),
            child: EntryId(Hash256::of(child)),
            child_index: 0,
            weight: Weight::from_bp(bp).unwrap(),
        }
    }

    fn batch(edges: Vec<EdgeRow>) -> AppendBatch {
        AppendBatch {
            edges,
            ..AppendBatch::default()
        }
    }

    /// A backend that wrote the early edges refuses a batch whose edges differ in any way
    /// (parent, child, weight, order or number); the child's index is not compared (early
    /// edges carry offsets).
    #[test]
    fn early_edges_must_be_the_batchs_edges() {
        let early = vec![edge(b"p", b"c", 10_000), edge(b"q", b"c", 5_000)];
        let mut check = |_: &dyn BackendRead, _: u64| Err(Error::internal("unused"));
        let guard = AppendGuard::new(&mut check).with_early_edges(&early);
        assert_eq!(guard.early_edges().len(), 2);
        let mut moved = early.clone();
        moved[0].child_index = 41;
        assert!(guard.same_edges(&batch(moved)));
        assert!(!guard.same_edges(&batch(vec![early[1], early[0]])));
        assert!(!guard.same_edges(&batch(vec![early[0]])));
        assert!(!guard.same_edges(&batch(vec![early[0], edge(b"q", b"c", 4_000)])));
        assert!(!guard.same_edges(&batch(vec![early[0], edge(b"r", b"c", 5_000)])));
        assert!(!guard.same_edges(&batch(vec![early[0], edge(b"q", b"d", 5_000)])));
        let mut none = |_: &dyn BackendRead, _: u64| Err(Error::internal("unused"));
        assert!(AppendGuard::new(&mut none).early_edges().is_empty());
    }
}
