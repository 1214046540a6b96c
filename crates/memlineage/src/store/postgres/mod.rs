//! The PostgreSQL store (feature `postgres`): one shared log that writer processes on many
//! hosts append to, with the guarantees of the embedded store (`docs/store.md`, "The
//! PostgreSQL store").
//!
//! **One total order.** Every append is one transaction that first locks the single row of
//! `log_head` (`SELECT … FOR UPDATE`), then reads the log's size: appends from any number of
//! connections, processes and hosts are serialised there, the first leaf index is fixed
//! inside the transaction, and the handle's guard runs after it (READ COMMITTED: each
//! statement sees every append committed before the lock was granted). Indices stay dense;
//! nothing interleaves.
//!
//! **The log head is held briefly.** What does not depend on the position (signatures, leaf
//! encodings, leaf hashes, value keys) is computed before the lock (`memory/stage.rs`); the
//! lock and the size are one round trip, the rows one statement (`append.rs`), then the
//! commit. New full-text documents go to a table without a GIN index; they are settled into
//! the indexed partitions, and the index's pending list merged, after the commit, in the
//! background (`pending.rs`), never by an insert that holds the lock.
//!
//! **Durability.** The commit returns after PostgreSQL flushed its WAL record
//! (`synchronous_commit = on` is set on every connection whose server default is weaker), so
//! an acknowledged append survives a crash of the writer, of the server and of the machine. A
//! batch is one transaction: one WAL flush (group commit).
//!
//! **Failures.** An error before the commit rolls back everything. A connection lost before
//! the commit (a server restart) is retried on a new connection for up to [`RETRY_FOR`],
//! running the guard again; a connection lost *during* the commit leaves its outcome unknown
//! to the client, so the store looks the batch's first entry up on a new connection, holding
//! the log head (the lost transaction has then ended): committed (success) or not (appended
//! again, within [`RETRY_FOR`]; then a retryable error), never a guess.
//!
//! **Reads** take a pooled connection each (`conn.rs`); a snapshot is one `REPEATABLE READ,
//! READ ONLY` transaction. Full-text search is BM25 in SQL (`search.rs`).

mod append;
mod conn;
mod embeddings;
mod partitions;
mod pending;
mod read;
mod schema;
mod search;

use super::backend::{AppendGuard, Backend, BackendRead, TextIndex};
use super::location::OpenMode;
use super::rows::{
    ControlRecord, EmbeddingRow, EntryLabels, IndexRow, NoteRow, StoredEntry, StoredNote, ValueRows,
};
use super::text::SearchTerms;
use crate::error::{Error, InputError, StorageError, StoreState};
use conn::{Conn, Pool, Pooled};
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::gate::ValueKey;
use memlineage_core::label::Weight;
use memlineage_core::merkle::NodeId;
use memlineage_core::{EntryId, Hash256};
use read::Reader;
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use pending::MERGE_EVERY as PENDING_MERGE_EVERY;
pub use schema::SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION;
pub use schema::SEARCH_PARTITION;

/// How long an operation keeps retrying after the server became unreachable or aborted the
/// transaction for a retryable reason (a restart takes a few seconds).
pub const RETRY_FOR: Duration = Duration::from_secs(15);

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The PostgreSQL store.
pub struct PostgresStore {
    pool: Arc<Pool>,
    /// Where the store is, without the password.
    shown: String,
    /// Write transactions this value has committed.
    commits: AtomicU64,
    /// Opened with [`OpenMode::ReadOnly`]: every session is `default_transaction_read_only`,
    /// the schema is never migrated, and both writes are refused.
    read_only: bool,
    /// The full-text index's pending list, merged after appends (`pending.rs`).
    merge: pending::PendingMerge,
    /// The full-text documents' partitions this value knows to exist (`partitions.rs`).
    partitions: Arc<partitions::Partitions>,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/database?…`, or
    /// the key/value form of libpq) and applies the schema migrations it lacks. `Existing`:
    /// the database must hold a MemLineage schema; `Create`: it must not hold an initialised
    /// store (an empty database gets the schema). A schema newer than this build's is refused.
    pub fn open(url: &str, mode: OpenMode) -> Result<PostgresStore, Error> {
        let shown = super::location::redact(url);
        let mut config: postgres::Config = url.parse().map_err(|e: postgres::Error| {
            Error::from(InputError::Location {
                input: shown.chars().take(200).collect(),
                problem: format!("not a PostgreSQL connection string: {e}"),
            })
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("memlineage");
        }
        let read_only = mode == OpenMode::ReadOnly;
        if read_only {
            // The server itself refuses writes on these sessions, whatever this crate does.
            let options = match config.get_options() {
                Some(o) => format!("{o} -c default_transaction_read_only=on"),
                None => "-c default_transaction_read_only=on".to_string(),
            };
            config.options(&options);
        }
        let pool = Arc::new(Pool::new(config));
        let store = PostgresStore {
            pool,
            shown,
            commits: AtomicU64::new(0),
            read_only,
            merge: pending::PendingMerge::default(),
            partitions: Arc::default(),
        };
        store.prepare(mode)?;
        if !read_only {
            store.merge.catch_up(&store.pool, &store.partitions);
        }
        Ok(store)
    }

    /// Checks the schema against `mode` and migrates it.
    fn prepare(&self, mode: OpenMode) -> Result<(), Error> {
        let mut conn = self.pool.get().map_err(|e| self.unreachable(e))?;
        let found = schema::version(&mut conn)?;
        if let Some(v) = found {
            schema::check_supported(v)?;
        }
        if matches!(mode, OpenMode::Existing | OpenMode::ReadOnly) && found.unwrap_or(0) == 0 {
            return Err(StoreState::Missing {
                location: format!("{} (the database holds no MemLineage store)", self.shown),
            }
            .into());
        }
        if mode == OpenMode::ReadOnly {
            // A reader changes nothing, not even the schema: an older one is refused.
            return match found {
                Some(v) if v == schema::SCHEMA_VERSION => Ok(()),
                Some(v) => Err(StoreState::UnsupportedSchema {
                    found: v,
                    supported: schema::SCHEMA_VERSION,
                }
                .into()),
                None => Err(StoreState::Missing {
                    location: self.shown.clone(),
                }
                .into()),
            };
        }
        schema::migrate(&mut conn)?;
        if mode == OpenMode::Create {
            let reader = Reader::new(&mut conn);
            if reader.size()? != 0 || reader.setting("origin")?.is_some() {
                return Err(StoreState::Exists {
                    location: self.shown.clone(),
                }
                .into());
            }
        }
        Ok(())
    }

    /// A server that cannot be reached at open, in words that name it.
    fn unreachable(&self, e: Error) -> Error {
        match e {
            Error::Storage(s) => Error::Storage(StorageError {
                message: format!("cannot connect to {}: {}", self.shown, s.message),
                ..s
            }),
            e => e,
        }
    }

    /// Refuses a write through a read-only open ([`StoreState::ReadOnly`]).
    fn writable(&self) -> Result<(), Error> {
        if self.read_only {
            return Err(StoreState::ReadOnly {
                location: self.shown.clone(),
            }
            .into());
        }
        Ok(())
    }

    fn committed(&self) {
        self.commits.fetch_add(1, Ordering::SeqCst);
    }

    /// Runs `f` on a pooled connection, retrying on a new one while the error is retryable
    /// and [`RETRY_FOR`] has not passed (reads, and writes that are idempotent).
    fn with<R>(&self, mut f: impl FnMut(&mut Conn) -> Result<R, Error>) -> Result<R, Error> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(20);
        loop {
            let result = self.pool.get().and_then(|mut conn| {
                let r = f(&mut conn);
                if r.is_err() {
                    conn.discard_if_broken();
                }
                r
            });
            match result {
                Err(e) if retryable(&e) && started.elapsed() < RETRY_FOR => {
                    self.pool.clear();
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                r => return r,
            }
        }
    }

    /// One append attempt on `conn`: the first entry's index and the full-text documents
    /// appended.
    fn try_append(
        &self,
        conn: &mut Conn,
        guard: &mut AppendGuard<'_>,
    ) -> Result<(u64, pending::Documents), Attempt> {
        let body = (|| -> Result<Written, Error> {
            // The edges, when known before (they do not depend on the position), go in before
            // the lock: the log head is held for less.
            let early = guard.early_edges();
            let rows = if early.is_empty() {
                // The lock first, then the size: the second statement takes its snapshot once
                // the lock is granted, so it sees every append committed before. One round
                // trip.
                conn.simple_rows(LOCK_HEAD)?
            } else {
                conn.batch(BEGIN)?;
                append::insert_edges(conn, early)?;
                conn.simple_rows(LOCK_HEAD_IN_TRANSACTION)?
            };
            let first = head_size(&rows)?;
            let batch = guard.run(&Reader::new(conn), first)?;
            let edges_written = !early.is_empty();
            if edges_written && !guard.same_edges(&batch) {
                return Err(Error::internal(
                    "the append guard built a batch whose lineage edges are not the ones it staged",
                ));
            }
            let documents = documents(&batch);
            append::write(conn, &batch, guard, edges_written)?;
            Ok(Written {
                first,
                marker: batch.entries.first().map(|e| (e.id, e.index)),
                documents,
            })
        })();
        let Written {
            first,
            marker,
            documents,
        } = match body {
            Ok(v) => v,
            Err(e) => {
                let _ = conn.batch("ROLLBACK");
                return Err(Attempt::Before(e));
            }
        };
        match conn.batch("COMMIT") {
            Ok(()) => Ok((first, documents)),
            // The server answered: it did not commit.
            Err(e) if !conn.is_closed() => Err(Attempt::Before(e)),
            Err(e) => Err(Attempt::InDoubt(Box::new(InDoubt { first, marker, e }))),
        }
    }

    /// Whether an append whose commit got no answer was committed: its first entry `id` is in
    /// the log at the `index` the transaction fixed. The lookup takes the log head first: the
    /// lost transaction held it until it ended, so once it is granted the outcome is final (a
    /// transaction still running on the server — a partition rather than a crash — is waited
    /// for, never guessed), and an append found not applied can be made again.
    fn resolve(&self, (id, index): (EntryId, u64)) -> Result<bool, Error> {
        let found = self.with(|c| {
            let looked = c
                .simple_rows(LOCK_HEAD)
                .and_then(|_| Reader::new(c).labels_by_id(&id));
            let _ = c.batch("ROLLBACK");
            looked
        })?;
        Ok(matches!(found, Some(l) if l.index == index))
    }

    /// The error of an append whose commit got no answer and that was not applied.
    fn not_applied(&self, e: Error) -> Error {
        Error::Storage(StorageError {
            message: format!(
                "the connection to {} was lost while committing; the append was not applied: {e}",
                self.shown
            ),
            retryable: true,
            ..StorageError::new("postgres", "")
        })
    }
}

/// The statement that begins an append's transaction (a literal, for `concat!`).
macro_rules! begin_sql {
    () => {
        "BEGIN ISOLATION LEVEL READ COMMITTED"
    };
}

/// The lock on the log head, then the log's size (a literal, for `concat!`).
macro_rules! lock_head_sql {
    () => {
        "SELECT size FROM log_head WHERE one FOR UPDATE; \
         SELECT COALESCE(max(idx) + 1, 0) FROM entries"
    };
}

/// Begins an append: the transaction, the lock on the log head (every append takes it first:
/// one total order), then the log's size as of the lock (READ COMMITTED: a new snapshot per
/// statement).
const LOCK_HEAD: &str = concat!(begin_sql!(), "; ", lock_head_sql!());

/// The transaction of an append that writes rows before it takes the log head.
const BEGIN: &str = begin_sql!();

/// [`LOCK_HEAD`] inside a transaction begun by [`BEGIN`].
const LOCK_HEAD_IN_TRANSACTION: &str = lock_head_sql!();

/// The log's size from the rows of [`LOCK_HEAD`]: its lock row, then the size.
fn head_size(rows: &[postgres::SimpleQueryRow]) -> Result<u64, Error> {
    let [_lock, size] = rows else {
        return Err(StoreState::NotInitialised {
            missing: "the log_head row".into(),
        }
        .into());
    };
    let text = size.try_get(0)?.unwrap_or("0");
    text.parse::<u64>()
        .map_err(|e| Error::internal(format!("the log's size {text:?}: {e}")))
}

/// What an append attempt wrote, before its commit.
struct Written {
    /// The index of its first entry.
    first: u64,
    /// The first entry's id and index, to look up when the commit gets no answer.
    marker: Option<(EntryId, u64)>,
    /// Full-text documents appended.
    documents: pending::Documents,
}

/// The full-text documents of a batch: how many.
fn documents(batch: &super::rows::AppendBatch) -> pending::Documents {
    pending::Documents {
        count: batch
            .entries
            .iter()
            .filter(|e| e.search_text.is_some())
            .count() as u64,
    }
}

/// How an append attempt failed.
enum Attempt {
    /// Before or at the commit, with the server's answer: nothing was written.
    Before(Error),
    /// The connection was lost during the commit: the outcome is unknown until looked up.
    InDoubt(Box<InDoubt>),
}

/// An append whose commit got no answer.
struct InDoubt {
    /// The index the transaction fixed for the first entry.
    first: u64,
    /// The first entry's id and index, to look up (`None`: a batch without entries).
    marker: Option<(EntryId, u64)>,
    /// The error the commit got.
    e: Error,
}

fn retryable(e: &Error) -> bool {
    matches!(e, Error::Storage(s) if s.retryable)
}

impl Drop for PostgresStore {
    /// Lets a settle running in the background finish (bounded): a process that exits right
    /// after its appends would otherwise have it rolled back, and the documents wait for the
    /// next settle.
    fn drop(&mut self) {
        self.merge.wait_idle(SETTLE_WAIT);
    }
}

/// How long dropping a store value waits for its background settle.
const SETTLE_WAIT: Duration = Duration::from_secs(10);

impl Pooled<'_> {
    /// Drops the connection instead of returning it when it closed or is left in a failed
    /// transaction.
    fn discard_if_broken(&mut self) {
        if self.is_closed() || self.batch("ROLLBACK").is_err() {
            self.discard();
        }
    }
}

macro_rules! delegate_read {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        impl BackendRead for PostgresStore {
            $(fn $name(&self, $($arg: $ty),*) -> $ret {
                self.with(|c| Reader::new(c).$name($($arg),*))
            })*
            fn text_index(&self) -> &dyn TextIndex {
                self
            }
        }
    };
}

super::backend::forward_reads!(delegate_read! {});

impl TextIndex for PostgresStore {
    fn search(&self, terms: &SearchTerms, scope: &Scope, limit: usize) -> Result<Vec<u64>, Error> {
        self.with(|c| Reader::new(c).search(terms, scope, limit))
    }
}

/// A read transaction on one pooled connection, ended when dropped.
struct Snapshot<'a> {
    conn: RefCell<Pooled<'a>>,
}

impl Snapshot<'_> {
    fn read<R>(&self, f: impl FnOnce(&Reader<'_>) -> Result<R, Error>) -> Result<R, Error> {
        let mut conn = self
            .conn
            .try_borrow_mut()
            .map_err(|_| Error::internal("a PostgreSQL snapshot was used re-entrantly"))?;
        f(&Reader::new(&mut conn))
    }
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        let conn = self.conn.get_mut();
        if conn.batch("COMMIT").is_err() {
            conn.discard();
        }
    }
}

macro_rules! delegate_snapshot {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        impl BackendRead for Snapshot<'_> {
            $(fn $name(&self, $($arg: $ty),*) -> $ret {
                self.read(|r| r.$name($($arg),*))
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
        self.read(|r| r.search(terms, scope, limit))
    }
}

impl Backend for PostgresStore {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn location(&self) -> String {
        self.shown.clone()
    }

    fn snapshot(&self) -> Result<Box<dyn BackendRead + '_>, Error> {
        let started = Instant::now();
        loop {
            let attempt = self.pool.get().and_then(|mut conn| {
                match conn.batch("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY") {
                    Ok(()) => Ok(conn),
                    Err(e) => {
                        conn.discard();
                        Err(e)
                    }
                }
            });
            match attempt {
                Ok(conn) => {
                    return Ok(Box::new(Snapshot {
                        conn: RefCell::new(conn),
                    }));
                }
                Err(e) if retryable(&e) && started.elapsed() < RETRY_FOR => {
                    self.pool.clear();
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn append(&self, guard: &mut AppendGuard<'_>) -> Result<u64, Error> {
        self.writable()?;
        let started = Instant::now();
        let mut pause = Duration::from_millis(20);
        loop {
            let mut conn = match self.pool.get() {
                Ok(c) => c,
                Err(e) if retryable(&e) && started.elapsed() < RETRY_FOR => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                    continue;
                }
                Err(e) => return Err(e),
            };
            match self.try_append(&mut conn, guard) {
                Ok((first, documents)) => {
                    self.committed();
                    drop(conn);
                    self.merge.appended(&self.pool, &self.partitions, documents);
                    return Ok(first);
                }
                Err(Attempt::Before(e)) => {
                    if conn.is_closed() {
                        conn.discard();
                        self.pool.clear();
                    }
                    if !(retryable(&e) && started.elapsed() < RETRY_FOR) {
                        return Err(e);
                    }
                    drop(conn);
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                Err(Attempt::InDoubt(doubt)) => {
                    let InDoubt { first, marker, e } = *doubt;
                    conn.discard();
                    drop(conn);
                    self.pool.clear();
                    let Some(marker) = marker else {
                        return Err(Error::Storage(StorageError {
                            message: format!(
                                "the connection to {} was lost while committing an append without entries; it may or may not have been applied: {e}",
                                self.shown
                            ),
                            retryable: false,
                            ..StorageError::new("postgres", "")
                        }));
                    };
                    if self.resolve(marker)? {
                        self.committed();
                        return Ok(first);
                    }
                    // Certainly not applied: append again, as after any retryable failure.
                    if started.elapsed() >= RETRY_FOR {
                        return Err(self.not_applied(e));
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    fn save_checkpoint(&self, note: &NoteRow) -> Result<(), Error> {
        self.writable()?;
        let size = read::to_i64(note.size())?;
        self.with(|c| {
            c.execute(
                "INSERT INTO checkpoints (size, note) VALUES ($1, $2) \
                 ON CONFLICT (size) DO UPDATE SET note = excluded.note",
                &[&size, &note.note()],
            )
        })?;
        self.committed();
        Ok(())
    }

    fn save_values(&self, rows: &ValueRows) -> Result<(), Error> {
        self.writable()?;
        let keys: Vec<&[u8]> = rows
            .rows()
            .iter()
            .map(|(k, _)| k.as_bytes().as_slice())
            .collect();
        let idx: Vec<i64> = rows
            .rows()
            .iter()
            .map(|(_, i)| read::to_i64(*i))
            .collect::<Result<_, _>>()?;
        self.with(|c| {
            c.batch("BEGIN")?;
            let done = append::insert_values(c, &keys, &idx).and_then(|()| match rows.marker() {
                Some((k, v)) => c
                    .execute(
                        "INSERT INTO settings (key, value) VALUES ($1, $2) \
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        &[&k, &v],
                    )
                    .map(|_| ()),
                None => Ok(()),
            });
            match done {
                Ok(()) => c.batch("COMMIT"),
                Err(e) => {
                    let _ = c.batch("ROLLBACK");
                    Err(e)
                }
            }
        })?;
        self.committed();
        Ok(())
    }

    fn counts_terms(&self) -> bool {
        true
    }

    fn commits(&self) -> Option<u64> {
        Some(self.commits.load(Ordering::SeqCst))
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn save_embeddings(&self, rows: &[EmbeddingRow]) -> Result<(), Error> {
        self.writable()?;
        if rows.is_empty() {
            return Ok(());
        }
        self.with(|c| embeddings::save(c, rows))?;
        self.committed();
        Ok(())
    }
}
