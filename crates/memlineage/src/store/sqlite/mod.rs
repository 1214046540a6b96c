//! The embedded store: SQLite (bundled) in WAL mode with `synchronous=FULL` (`docs/store.md`).
//!
//! Durability: an append is one `BEGIN IMMEDIATE … COMMIT` transaction; with WAL and
//! `synchronous=FULL` the commit fsyncs the WAL before returning, so an acknowledged write
//! survives `kill -9` and power loss, and a batch of many entries costs one fsync (group
//! commit). Two processes writing at once serialise on SQLite's write lock (`BEGIN IMMEDIATE`
//! with a busy timeout); the guard runs inside the transaction, after the first index is fixed,
//! so neither can lose or interleave the other's writes.
//!
//! Connections: one writer, and for a file store a small pool of reader connections
//! (`pool.rs`), so reads — a retrieval's snapshot among them — run beside an append and beside
//! each other (WAL readers do not block the writer). An in-memory database is one connection
//! for everything.

mod append;
mod buckets;
mod embeddings;
mod entries;
mod full_text;
mod ids;
mod logged_ids;
mod merge_slices;
mod nodes;
mod pool;
mod read;
mod schema;
mod search;
mod value_tail;
mod values;
mod wal_checkpoints;
mod wal_mode;

use super::backend::{AppendGuard, Backend, BackendRead, LoggedIdsSummary, TextIndex};
use super::rows::{
    ControlRecord, EmbeddingRow, EntryLabels, FullTextProgress, IndexRow, NoteRow, StoredEntry,
    StoredNote, ValueRows, WalCheckpoint,
};
use super::text::SearchTerms;
use crate::error::{Error, InputError, StoreState};
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::gate::ValueKey;
use memlineage_core::label::Weight;
use memlineage_core::merkle::NodeId;
use memlineage_core::{EntryId, Hash256};
use nodes::NodeTable;
use pool::{Pool, Pooled};
use read::Reader;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, TransactionBehavior, params};
use schema::{
    CREATE, CREATE_EMBEDDINGS, CREATE_ENTRY_IDS, CREATE_MERKLE_NODES, CREATE_VALUE_KEYS,
    CREATE_VALUE_MERGING, CREATE_VALUE_TAIL, SCHEMA_VERSION, UPGRADABLE_VERSIONS,
};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use value_tail::Tail;
use wal_checkpoints::Checkpoints;

/// Prepared statements kept per connection (rusqlite's default is 16; the store uses about
/// 25 texts besides at most 36 bucketed reads of nodes, entries and ids, `buckets.rs`).
const STATEMENT_CACHE: usize = 96;

/// SQLite's page cache per connection, in KiB (the default is 2 MiB): room for a small
/// store's whole search index and entries, and for the upper B-tree levels of a large one.
/// Pages are cached only as they are read, so a connection's memory grows by at most this much.
const PAGE_CACHE_KIB: i64 = 8 * 1024;

/// WAL frames (pages) after which a commit checkpoints the WAL into the database file
/// (SQLite's default is 1000). A batch of 256 entries writes ≈ 200 pages to the WAL into a
/// small store and ≈ 800 into a store of 10^6 (random `id` and `edges` keys dirty a page each),
/// so by default every second large-store commit also copied those pages to the database file
/// and fsynced it. At 4000 (16 MiB of WAL) a checkpoint comes every ≈ 5 such batches and pages
/// dirtied again meanwhile are copied once. Durability is unchanged: every commit still fsyncs
/// the WAL (`synchronous=FULL`); the checkpoint only moves committed pages (docs/store.md).
const WAL_CHECKPOINT_PAGES: i64 = 4000;

/// How long a writer waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The flags of the reader connections of a writable store (`query_only` makes them readers).
const READ_WRITE_FLAGS: OpenFlags =
    OpenFlags::SQLITE_OPEN_READ_WRITE.union(OpenFlags::SQLITE_OPEN_NO_MUTEX);

/// The flags of every connection of a store opened read-only.
const READ_ONLY_FLAGS: OpenFlags =
    OpenFlags::SQLITE_OPEN_READ_ONLY.union(OpenFlags::SQLITE_OPEN_NO_MUTEX);

/// The SQLite store.
pub struct SqliteStore {
    /// The write connection (every connection of an in-memory database).
    writer: Mutex<Connection>,
    /// Reader connections of a file store; `None` in memory.
    readers: Option<Pool>,
    /// The database file; `None` in memory.
    path: Option<PathBuf>,
    /// Write transactions this value has committed (each one fsync under `synchronous=FULL`).
    commits: AtomicU64,
    /// Opened with `SQLITE_OPEN_READ_ONLY` ([`SqliteStore::open_read_only`]).
    read_only: bool,
    /// The handle's copy of the value index's tail (`value_tail.rs`).
    tail: Tail,
    /// Which table the Merkle nodes are read from (`nodes.rs`).
    nodes: NodeTable,
    /// Entries after which an append merges the value index's tail ([`SqliteStore::value_tail`]).
    tail_entries: u64,
    /// The connection that checkpoints deferred by the owner run on (`wal_checkpoints.rs`).
    checkpoints: Checkpoints,
    /// Appends leave their entries' texts to [`Backend::index_full_text`] (`full_text.rs`).
    defer_full_text: AtomicBool,
}

impl SqliteStore {
    /// Opens the store file at `path`, creating an empty store there if the file does not
    /// exist. ([`StoreLocation`](crate::StoreLocation) distinguishes opening an existing store
    /// from creating a new one.)
    pub fn open(path: &Path) -> Result<SqliteStore, Error> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        let store = Self::init(conn, Some(path.to_path_buf()))?;
        Ok(store)
    }

    /// Opens the existing store file at `path` for reading only: every connection is opened
    /// with `SQLITE_OPEN_READ_ONLY` and set `query_only`, so nothing can be written through
    /// it (a monitor follows a log this way, and needs only read permission on the file).
    /// Both writes fail with [`StoreState::ReadOnly`]. A file that is not a store of this
    /// schema version (or of version 1, read as it is) is refused.
    pub fn open_read_only(path: &Path) -> Result<SqliteStore, Error> {
        let conn = Connection::open_with_flags(path, READ_ONLY_FLAGS)?;
        configure(&conn)?;
        conn.pragma_update(None, "query_only", true)?;
        let version: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version != SCHEMA_VERSION && !UPGRADABLE_VERSIONS.contains(&version) {
            return Err(StoreState::UnsupportedSchema {
                found: version,
                supported: SCHEMA_VERSION,
            }
            .into());
        }
        Ok(SqliteStore {
            writer: Mutex::new(conn),
            readers: Some(Pool::new(path.to_path_buf(), READ_ONLY_FLAGS)),
            path: Some(path.to_path_buf()),
            commits: AtomicU64::new(0),
            read_only: true,
            tail: Tail::default(),
            nodes: NodeTable::default(),
            tail_entries: values::TAIL_ENTRIES,
            checkpoints: Checkpoints::default(),
            defer_full_text: AtomicBool::new(false),
        })
    }

    /// An in-memory database (tests, the evaluation): gone when dropped.
    pub fn in_memory() -> Result<SqliteStore, Error> {
        Self::init(Connection::open_in_memory()?, None)
    }

    /// Sets after how many entries an append merges the value index's tail into its
    /// key-ordered table (default 32,768, `docs/store.md`, "Value index"). Smaller tails cost
    /// less memory per handle and more pages per entry; what a lookup answers is the same for
    /// any size (tests use tiny ones to merge often).
    pub fn value_tail(mut self, entries: u64) -> SqliteStore {
        self.tail_entries = entries.max(1);
        self
    }

    fn init(mut conn: Connection, path: Option<PathBuf>) -> Result<SqliteStore, Error> {
        configure(&conn)?;
        if path.is_some() {
            // (An in-memory database has no WAL; it keeps its own journal.)
            wal_mode::switch_to_wal(&conn, BUSY_TIMEOUT)?;
        }
        conn.pragma_update(None, "synchronous", "FULL")?;
        // Write path: checkpoints less often (see `WAL_CHECKPOINT_PAGES`).
        conn.pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)?;
        let version: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version == 0 {
            conn.execute_batch(&format!(
                "BEGIN IMMEDIATE; {CREATE} {CREATE_MERKLE_NODES} {CREATE_VALUE_TAIL} \
                 {CREATE_ENTRY_IDS} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            ))?;
        } else if UPGRADABLE_VERSIONS.contains(&version) {
            upgrade(&mut conn, version)?;
        } else if version != SCHEMA_VERSION {
            return Err(StoreState::UnsupportedSchema {
                found: version,
                supported: SCHEMA_VERSION,
            }
            .into());
        }
        conn.execute_batch(CREATE_EMBEDDINGS)?;
        conn.execute_batch(CREATE_VALUE_KEYS)?;
        conn.execute_batch(CREATE_VALUE_MERGING)?;
        schema::merge_full_text_less_often(&conn)?;
        Ok(SqliteStore {
            writer: Mutex::new(conn),
            readers: path
                .as_ref()
                .map(|p| Pool::new(p.clone(), READ_WRITE_FLAGS)),
            path,
            commits: AtomicU64::new(0),
            read_only: false,
            tail: Tail::default(),
            nodes: NodeTable::default(),
            tail_entries: values::TAIL_ENTRIES,
            checkpoints: Checkpoints::default(),
            defer_full_text: AtomicBool::new(false),
        })
    }

    fn committed(&self) {
        self.commits.fetch_add(1, Ordering::SeqCst);
    }

    /// Refuses a write through a store opened read-only.
    fn writable(&self) -> Result<(), Error> {
        if self.read_only {
            return Err(StoreState::ReadOnly {
                location: self.location(),
            }
            .into());
        }
        Ok(())
    }

    fn lock_writer(&self) -> Result<std::sync::MutexGuard<'_, Connection>, Error> {
        self.writer
            .lock()
            .map_err(|_| Error::internal("store mutex poisoned by a panic in another thread"))
    }

    /// A connection to read with: a pooled reader of a file store, else the one connection.
    fn reader(&self) -> Result<Pooled<'_>, Error> {
        match &self.readers {
            Some(pool) => pool.get(),
            None => Ok(Pooled::Shared(self.lock_writer()?)),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&Reader<'_>) -> Result<R, Error>) -> Result<R, Error> {
        let conn = self.reader()?;
        f(&Reader(&conn, &self.tail, &self.nodes))
    }

    /// Runs `f` on the write connection (unit tests that build tables by hand).
    #[cfg(test)]
    fn with_writer<R>(&self, f: impl FnOnce(&Connection) -> Result<R, Error>) -> Result<R, Error> {
        f(&*self.lock_writer()?)
    }
}

/// Upgrades a store of version 1 to 4 to version 5 in one transaction. Versions 1 and 2: the
/// value index's tail and `entry_ids` are created, every id below the merge point goes into
/// `entry_ids` and the tail above it is merged (`values.rs`), so the upgraded store has an
/// empty tail; their unique index on `entries.id` stays (SQLite cannot drop a constraint's
/// index); it costs writes, not correctness. Versions 1 to 3: the Merkle nodes move to their
/// positions (`nodes.rs`). Version 4: only the version changes (nothing is pending in its
/// full-text index, `full_text.rs`). (`docs/store.md`, "Upgrades".)
fn upgrade(conn: &mut Connection, version: u32) -> Result<(), Error> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let size: i64 = tx.query_row("SELECT COALESCE(MAX(idx) + 1, 0) FROM entries", [], |r| {
        r.get(0)
    })?;
    let size = read::index_from(size)?;
    if version < 3 {
        tx.execute_batch(&format!(
            "{CREATE_VALUE_TAIL} {CREATE_VALUE_KEYS} {CREATE_ENTRY_IDS}"
        ))?;
        let below = values::merged_below(&tx)?;
        ids::merge(&tx, 0, below)?;
        values::merge_if_full(&tx, size, 1)?;
    }
    if version < 4 {
        nodes::move_to_positions(&tx, size)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(())
}

/// The settings of every connection, reader or writer: none changes what is stored or what a
/// query returns (`docs/store.md`, "Read path").
pub(super) fn configure(conn: &Connection) -> Result<(), Error> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // Plans that do not depend on bound values, so a search with new terms is not
    // re-prepared on every call, and room in the statement cache for the bucketed reads.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)?;
    Ok(())
}

pub(super) fn to_i64(n: u64) -> Result<i64, Error> {
    i64::try_from(n).map_err(|_| InputError::OutOfRange(n).into())
}

macro_rules! delegate_read {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        impl BackendRead for SqliteStore {
            $(fn $name(&self, $($arg: $ty),*) -> $ret {
                self.with(|r| r.$name($($arg),*))
            })*
            fn text_index(&self) -> &dyn TextIndex {
                self
            }
        }
    };
}

super::backend::forward_reads!(delegate_read! {});

impl TextIndex for SqliteStore {
    fn search(&self, terms: &SearchTerms, scope: &Scope, limit: usize) -> Result<Vec<u64>, Error> {
        self.with(|r| r.search(terms, scope, limit))
    }
}

/// A read transaction on one connection, ended (and the connection returned) when dropped.
struct Snapshot<'a> {
    conn: Pooled<'a>,
    tail: &'a Tail,
    nodes: &'a NodeTable,
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        // Ending a read transaction cannot lose data; a failure leaves the connection in a
        // transaction, which the pool then discards.
        let ended = self
            .conn
            .prepare_cached("COMMIT")
            .and_then(|mut end| end.execute([]));
        if ended.is_err() {
            self.conn.discard();
        }
    }
}

macro_rules! delegate_snapshot {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        impl BackendRead for Snapshot<'_> {
            $(fn $name(&self, $($arg: $ty),*) -> $ret {
                Reader(&self.conn, self.tail, self.nodes).$name($($arg),*)
            })*
            fn text_index(&self) -> &dyn TextIndex {
                self
            }
        }
    };
}

super::backend::forward_reads!(delegate_snapshot! {});

impl TextIndex for Snapshot<'_> {
    fn search(&self, terms: &SearchTerms, scope: &Scope, limit: usize) -> Result<Vec<u64>, Error> {
        Reader(&self.conn, self.tail, self.nodes).search(terms, scope, limit)
    }
}

impl Backend for SqliteStore {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn location(&self) -> String {
        match &self.path {
            Some(p) => format!("sqlite:{}", p.display()),
            None => "sqlite::memory:".to_string(),
        }
    }

    fn snapshot(&self) -> Result<Box<dyn BackendRead + '_>, Error> {
        let conn = self.reader()?;
        conn.prepare_cached("BEGIN")?.execute([])?;
        Ok(Box::new(Snapshot {
            conn,
            tail: &self.tail,
            nodes: &self.nodes,
        }))
    }

    fn append(&self, guard: &mut AppendGuard<'_>) -> Result<u64, Error> {
        self.writable()?;
        let mut conn = self.lock_writer()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let first = Reader(&tx, &self.tail, &self.nodes).size()?;
        let batch = guard.run(&Reader(&tx, &self.tail, &self.nodes), first)?;
        append::write(
            &tx,
            &batch,
            guard,
            &self.tail,
            self.tail_entries,
            self.defer_full_text.load(Ordering::Relaxed),
        )?;
        tx.commit()?;
        self.committed();
        // After a merge too: it moved rows below this batch only, and the copy drops them at
        // its next look (`value_tail.rs`).
        self.tail.note_appended(&batch.entries);
        Ok(first)
    }

    fn save_checkpoint(&self, note: &NoteRow) -> Result<(), Error> {
        self.writable()?;
        self.lock_writer()?
            .prepare_cached("INSERT OR REPLACE INTO checkpoints (size, note) VALUES (?1, ?2)")?
            .execute(params![to_i64(note.size())?, note.note()])?;
        self.committed();
        Ok(())
    }

    fn save_embeddings(&self, rows: &[EmbeddingRow]) -> Result<(), Error> {
        let mut conn = self.lock_writer()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        embeddings::save(&tx, rows)?;
        tx.commit()?;
        self.committed();
        Ok(())
    }

    fn save_values(&self, rows: &ValueRows) -> Result<(), Error> {
        self.writable()?;
        let mut conn = self.lock_writer()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        values::insert_filled(&tx, rows.rows().iter().map(|(k, i)| (k, *i)))?;
        if let Some(marker) = rows.marker() {
            tx.prepare_cached("INSERT OR REPLACE INTO settings (key, value) VALUES (?1, ?2)")?
                .execute(params![marker.0, marker.1])?;
        }
        tx.commit()?;
        self.committed();
        Ok(())
    }

    fn forget_cached(&self) {
        self.tail.forget();
    }

    fn commits(&self) -> Option<u64> {
        Some(self.commits.load(Ordering::SeqCst))
    }

    fn defer_wal_checkpoints(&self) -> Result<bool, Error> {
        self.defer_checkpoints()
    }

    fn keep_logged_ids(&self) -> Result<Option<LoggedIdsSummary>, Error> {
        if self.read_only {
            return Ok(None);
        }
        let conn = self.reader()?;
        values::in_read_transaction(&conn, |conn| self.tail.keep_logged(conn))
    }

    fn checkpoint_wal(&self) -> Result<Option<WalCheckpoint>, Error> {
        self.checkpoint_wal_now()
    }

    fn defer_full_text(&self) -> Result<bool, Error> {
        if self.read_only {
            return Ok(false);
        }
        self.defer_full_text.store(true, Ordering::Relaxed);
        Ok(true)
    }

    fn index_full_text(&self, max: usize) -> Result<FullTextProgress, Error> {
        if self.read_only || max == 0 {
            return Ok(FullTextProgress {
                indexed: 0,
                pending: full_text::pending(&*self.reader()?)?,
            });
        }
        // A read first: nothing pending (the usual case) takes no write lock.
        if full_text::pending_from(&*self.reader()?)?.is_none() {
            return Ok(FullTextProgress::default());
        }
        let progress = full_text::commit_catch_up(&mut *self.lock_writer()?, max)?;
        if progress.indexed > 0 {
            self.committed();
        }
        Ok(progress)
    }

    fn read_only(&self) -> bool {
        self.read_only
    }
}
