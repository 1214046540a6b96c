//! The storage backends behind the [`Memory`](crate::Memory) handle: a small trait in the
//! manner of redb's `StorageBackend` ([`Backend`]), about persistence only.
//!
//! The handle computes everything an append writes — leaves, Merkle nodes, lineage edges, index
//! copies, forgotten rows, effective labels ([`AppendBatch`]) — inside the backend's write
//! transaction, through an [`AppendGuard`] that only the handle can make; a backend stores those
//! bytes and reads them back ([`BackendRead`]), and keeps a full-text index beside them
//! ([`TextIndex`]). It makes no trust decision: everything it returns is re-verified by the
//! handle (signatures, leaves against the tree, labels), so a store edited behind the program's
//! back is caught by `verify` and by retrieval.
//!
//! Backends: [`SqliteStore`] (a file, durable; feature `sqlite`, on by default),
//! `PostgresStore` (a shared database for many writers on many hosts; feature `postgres`) and
//! [`MemoryStore`] (RAM only). A [`StoreLocation`] (`PATH`, `sqlite:PATH`, `memory:`,
//! `postgres://…`) names one and opens it.

mod backend;
mod location;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
pub(crate) mod provided;
mod rows;
#[cfg(feature = "sqlite")]
mod sqlite;
mod text;

pub use backend::{AppendGuard, Backend, BackendRead, LoggedIdsSummary, TextIndex, WriteStage};
pub use location::{OpenMode, STORE_FILE, StoreLocation};
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{
    PENDING_MERGE_EVERY, POSTGRES_SCHEMA_VERSION, PostgresStore, RETRY_FOR, SEARCH_PARTITION,
};
pub use rows::{
    AppendBatch, ControlRecord, EdgeRow, EmbeddingRow, EntryLabels, EntryRow, ForgottenRow,
    FullTextProgress, IndexRow, NewRecord, NoteRow, StoredEntry, StoredNote, ValueRows,
    WalCheckpoint,
};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
pub use text::{MAX_QUERY_TERMS, SearchTerms, TermCounts, tokens};
