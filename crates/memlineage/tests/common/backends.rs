//! The backends the shared tests run on, and `delegate_backend!`, which forwards every method of
//! the backend traits to a field (a wrapper then overrides what it changes).

use memlineage::SqliteStore;
use memlineage::store::{Backend, MemoryStore};

/// What a wrapper changes in the entries it forwards (nothing, by default).
pub trait Edit {
    fn edit(&self, e: memlineage::store::StoredEntry) -> memlineage::store::StoredEntry {
        e
    }
}

/// Implements `BackendRead` for `$ty` by forwarding to `self.$f`, the entries read passed
/// through the wrapper's [`Edit`].
macro_rules! delegate_backend {
    ($ty:ty, $f:tt) => {
        impl memlineage::store::BackendRead for $ty {
            fn size(&self) -> Result<u64, memlineage::Error> {
                self.$f.size()
            }
            fn entries(
                &self,
                start: u64,
                limit: u64,
            ) -> Result<Vec<memlineage::store::StoredEntry>, memlineage::Error> {
                use crate::common::backends::Edit;
                Ok(self
                    .$f
                    .entries(start, limit)?
                    .into_iter()
                    .map(|e| self.edit(e))
                    .collect())
            }
            fn entries_by_index(
                &self,
                indices: &[u64],
            ) -> Result<Vec<Option<memlineage::store::StoredEntry>>, memlineage::Error> {
                use crate::common::backends::Edit;
                Ok(self
                    .$f
                    .entries_by_index(indices)?
                    .into_iter()
                    .map(|e| e.map(|e| self.edit(e)))
                    .collect())
            }
            fn entries_by_id(
                &self,
                ids: &[memlineage_core::EntryId],
            ) -> Result<Vec<Option<memlineage::store::StoredEntry>>, memlineage::Error> {
                use crate::common::backends::Edit;
                Ok(self
                    .$f
                    .entries_by_id(ids)?
                    .into_iter()
                    .map(|e| e.map(|e| self.edit(e)))
                    .collect())
            }
            fn ids_from(
                &self,
                from: &memlineage_core::EntryId,
                limit: usize,
            ) -> Result<Vec<memlineage_core::EntryId>, memlineage::Error> {
                self.$f.ids_from(from, limit)
            }
            fn nodes(
                &self,
                ids: &[memlineage_core::merkle::NodeId],
            ) -> Result<Vec<memlineage_core::Hash256>, memlineage::Error> {
                self.$f.nodes(ids)
            }
            fn children(
                &self,
                id: &memlineage_core::EntryId,
            ) -> Result<
                Vec<(memlineage_core::EntryId, memlineage_core::label::Weight)>,
                memlineage::Error,
            > {
                self.$f.children(id)
            }
            fn edge_weights(
                &self,
                edges: &[(memlineage_core::EntryId, memlineage_core::EntryId)],
            ) -> Result<Vec<Option<memlineage_core::label::Weight>>, memlineage::Error> {
                self.$f.edge_weights(edges)
            }
            fn edge_count(&self) -> Result<Option<u64>, memlineage::Error> {
                self.$f.edge_count()
            }
            fn indices_by_writer(&self, writer: &str) -> Result<Vec<u64>, memlineage::Error> {
                self.$f.indices_by_writer(writer)
            }
            fn control_records(
                &self,
                kind: memlineage_core::entry::EntryKind,
                from: u64,
            ) -> Result<Vec<memlineage::store::ControlRecord>, memlineage::Error> {
                self.$f.control_records(kind, from)
            }
            fn labels_by_id(
                &self,
                id: &memlineage_core::EntryId,
            ) -> Result<Option<memlineage::store::EntryLabels>, memlineage::Error> {
                self.$f.labels_by_id(id)
            }
            fn index_rows(
                &self,
                start: u64,
                limit: u64,
            ) -> Result<Vec<memlineage::store::IndexRow>, memlineage::Error> {
                self.$f.index_rows(start, limit)
            }
            fn latest_checkpoint(&self) -> Result<Option<String>, memlineage::Error> {
                self.$f.latest_checkpoint()
            }
            fn checkpoint_notes(
                &self,
                max_size: u64,
                limit: usize,
            ) -> Result<Vec<memlineage::store::StoredNote>, memlineage::Error> {
                self.$f.checkpoint_notes(max_size, limit)
            }
            fn setting(&self, key: &str) -> Result<Option<String>, memlineage::Error> {
                self.$f.setting(key)
            }
            fn text_index(&self) -> &dyn memlineage::store::TextIndex {
                self.$f.text_index()
            }
            fn embeddings(
                &self,
                model: &str,
                start: u64,
                limit: u64,
            ) -> Result<Vec<memlineage::store::EmbeddingRow>, memlineage::Error> {
                self.$f.embeddings(model, start, limit)
            }
            fn embedding_models(&self) -> Result<Vec<String>, memlineage::Error> {
                self.$f.embedding_models()
            }
            fn value_carriers(
                &self,
                key: &memlineage_core::gate::ValueKey,
                from: u64,
                limit: usize,
            ) -> Result<Vec<u64>, memlineage::Error> {
                self.$f.value_carriers(key, from, limit)
            }
        }
    };
}
pub(crate) use delegate_backend;

/// A backend with a temporary directory that lives as long as it does.
pub struct InTempDir {
    inner: SqliteStore,
    _dir: tempfile::TempDir,
}

impl Edit for InTempDir {}

delegate_backend!(InTempDir, inner);

impl Backend for InTempDir {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn location(&self) -> String {
        self.inner.location()
    }
    fn snapshot(&self) -> Result<Box<dyn memlineage::store::BackendRead + '_>, memlineage::Error> {
        self.inner.snapshot()
    }
    fn append(
        &self,
        guard: &mut memlineage::store::AppendGuard<'_>,
    ) -> Result<u64, memlineage::Error> {
        self.inner.append(guard)
    }
    fn save_checkpoint(&self, note: &memlineage::store::NoteRow) -> Result<(), memlineage::Error> {
        self.inner.save_checkpoint(note)
    }
    fn save_values(&self, rows: &memlineage::store::ValueRows) -> Result<(), memlineage::Error> {
        self.inner.save_values(rows)
    }
    fn save_embeddings(
        &self,
        rows: &[memlineage::store::EmbeddingRow],
    ) -> Result<(), memlineage::Error> {
        self.inner.save_embeddings(rows)
    }
    fn commits(&self) -> Option<u64> {
        self.inner.commits()
    }
    fn read_only(&self) -> bool {
        self.inner.read_only()
    }
    fn forget_cached(&self) {
        self.inner.forget_cached()
    }
}

/// A fresh SQLite store in a file of its own temporary directory. Its value index's tail is
/// merged every 4 entries (the default is 16,384), so that every suite run on it also runs
/// across merges; the in-memory SQLite store keeps the default.
pub fn sqlite_file() -> Box<dyn Backend> {
    let dir = tempfile::tempdir().unwrap();
    let inner = SqliteStore::open(&dir.path().join("store.db"))
        .unwrap()
        .value_tail(4);
    Box::new(InTempDir { inner, _dir: dir })
}

/// A fresh SQLite store in memory.
pub fn sqlite_mem() -> Box<dyn Backend> {
    Box::new(SqliteStore::in_memory().unwrap())
}

/// A fresh in-memory store.
pub fn memory() -> Box<dyn Backend> {
    Box::new(MemoryStore::new())
}

/// A fresh database in the test binary's PostgreSQL cluster (`memlineage-pgtest`), opened as a
/// new store; `None` when PostgreSQL is not installed (and `CI` is not set: then it panics).
pub fn postgres_store() -> Option<Box<dyn Backend>> {
    let cluster = memlineage_pgtest::shared()?;
    let url = cluster.database();
    Some(
        memlineage::StoreLocation::Postgres(url)
            .open(memlineage::OpenMode::Create)
            .unwrap(),
    )
}

/// [`postgres_store`], for `all_stores!`: a test given this store on a machine without
/// PostgreSQL is skipped before it is called.
pub fn postgres() -> Box<dyn Backend> {
    postgres_store().expect("PostgreSQL availability is checked before the test runs")
}
