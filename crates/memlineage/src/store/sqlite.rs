//! The embedded store: SQLite (bundled) in WAL mode with `synchronous=FULL`.
//!
//! Durability: an append is one `BEGIN IMMEDIATE … COMMIT` transaction; with WAL and
//! `synchronous=FULL` the commit fsyncs the WAL before returning, so an acknowledged write
//! survives `kill -9` and power loss, and a batch of many entries costs one fsync (group
//! commit). Two processes writing at once serialise on SQLite's write lock (`BEGIN IMMEDIATE`
//! with a busy timeout); the guard runs inside the transaction, after the first index is fixed,
//! so neither can lose or interleave the other's writes.

mod buckets;
mod entries;
mod nodes;
mod search;

use super::schema::{CREATE, SCHEMA_VERSION};
use super::{
    AppendGuard, Effect, IndexRow, NewRecord, RegistryRecord, Store, StoreRead, StoredEntry,
};
use crate::error::Error;
use memlineage_core::entry::EntryKind;
use memlineage_core::label::{TrustLabel, Weight};
use memlineage_core::merkle::{self, NodeId};
use memlineage_core::{EntryId, Hash256};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Prepared statements kept per connection (rusqlite's default is 16; the store uses about
/// 25 texts besides at most 27 bucketed reads of nodes and entries, `sqlite/buckets.rs`).
const STATEMENT_CACHE: usize = 96;

/// SQLite's page cache per connection, in KiB (the default is 2 MiB): room for a small
/// store's whole search index and entries, and for the upper B-tree levels of a large one.
/// Pages are cached only as they are read, so a handle's memory grows by at most this much.
const PAGE_CACHE_KIB: i64 = 8 * 1024;

/// WAL frames (pages) after which a commit checkpoints the WAL into the database file
/// (SQLite's default is 1000). A batch of 256 entries writes ≈ 200 pages to the WAL into a
/// small store and ≈ 800 into a store of 10^6 (random `id` and `edges` keys dirty a page each),
/// so by default every second large-store commit also copied those pages to the database file
/// and fsynced it. At 4000 (16 MiB of WAL) a checkpoint comes every ≈ 5 such batches and pages
/// dirtied again meanwhile are copied once. Durability is unchanged: every commit still fsyncs
/// the WAL (`synchronous=FULL`); the checkpoint only moves committed pages (docs/store.md).
const WAL_CHECKPOINT_PAGES: i64 = 4000;

/// The SQLite store. One connection behind a mutex: SQLite serialises writers anyway, and the
/// handle stays `Send + Sync` for many threads.
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// Write transactions this handle has committed (each one fsync under `synchronous=FULL`).
    commits: AtomicU64,
}

impl SqliteStore {
    /// Opens (creating if needed) the store file at `path`.
    pub fn open(path: &Path) -> Result<SqliteStore, Error> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        Self::init(conn)
    }

    /// Opens an existing store file for reading only (`SQLITE_OPEN_READ_ONLY`, and
    /// `PRAGMA query_only`): the monitor reads a log this way, with no means to change it.
    /// Appends and checkpoints fail on such a handle.
    pub fn open_read_only(path: &Path) -> Result<SqliteStore, Error> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(Duration::from_secs(30))?;
        conn.pragma_update(None, "query_only", true)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let version: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version != SCHEMA_VERSION {
            return Err(Error::Store(format!(
                "store schema version {version} is not supported by this build (it reads version {SCHEMA_VERSION})"
            )));
        }
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            commits: AtomicU64::new(0),
        })
    }

    /// An in-memory store (tests, benchmarks, evaluation).
    pub fn in_memory() -> Result<SqliteStore, Error> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> Result<SqliteStore, Error> {
        conn.busy_timeout(Duration::from_secs(30))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Read-path settings (docs/store.md, "Read path"): plans that do not depend on bound
        // values, so a search with new terms is not re-prepared on every call, and room in the
        // statement cache for the bucketed node reads beside every other cached statement.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)?;
        // Write path: checkpoints less often (see `WAL_CHECKPOINT_PAGES`).
        conn.pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)?;
        let version: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version == 0 {
            conn.execute_batch(&format!(
                "BEGIN IMMEDIATE; {CREATE} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            ))?;
        } else if version != SCHEMA_VERSION {
            return Err(Error::Store(format!(
                "store schema version {version} is not supported by this build (it reads version {SCHEMA_VERSION})"
            )));
        }
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            commits: AtomicU64::new(0),
        })
    }

    /// How many write transactions this handle has committed since it was opened: an append
    /// (a whole batch), a saved checkpoint or a setting each count one. With WAL and
    /// `synchronous=FULL` every commit is one fsync, so group commit shows here as one commit
    /// per [`Memory::write_batch`](crate::Memory::write_batch).
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::SeqCst)
    }

    fn committed(&self) {
        self.commits.fetch_add(1, Ordering::SeqCst);
    }

    fn with<R>(&self, f: impl FnOnce(&Connection) -> Result<R, Error>) -> Result<R, Error> {
        let conn = self.conn.lock().map_err(|_| {
            Error::Store("store mutex poisoned by a panic in another thread".into())
        })?;
        f(&conn)
    }
}

/// Read queries over any connection or transaction.
struct Reader<'a>(&'a Connection);

const ENTRY_COLUMNS: &str = "e.idx, e.id, e.leaf, c.bytes, f.tombstone, x.label";
const ENTRY_FROM: &str = "entries e LEFT JOIN content c ON c.idx = e.idx \
     LEFT JOIN forgotten f ON f.id = e.id LEFT JOIN effective x ON x.id = e.id";

fn id_from(bytes: Vec<u8>, what: &str) -> Result<EntryId, Error> {
    Hash256::from_slice(&bytes)
        .map(EntryId)
        .ok_or_else(|| Error::Integrity(format!("{what} is not 32 bytes")))
}

fn row_to_entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        index: row.get(0)?,
        id: row.get(1)?,
        leaf: row.get(2)?,
        content: row.get(3)?,
        forgotten_by: row.get(4)?,
        effective: row.get(5)?,
    })
}

struct RawRow {
    index: i64,
    id: Vec<u8>,
    leaf: Vec<u8>,
    content: Option<Vec<u8>>,
    forgotten_by: Option<Vec<u8>>,
    effective: Option<String>,
}

impl RawRow {
    fn into_entry(self) -> Result<StoredEntry, Error> {
        let effective_label = match self.effective {
            Some(s) => Some(
                s.parse::<TrustLabel>()
                    .map_err(|e| Error::Integrity(format!("effective label: {e}")))?,
            ),
            None => None,
        };
        Ok(StoredEntry {
            index: u64::try_from(self.index)
                .map_err(|_| Error::Integrity("negative leaf index".into()))?,
            id: id_from(self.id, "entry id")?,
            leaf: self.leaf,
            content: self.content,
            forgotten_by: self
                .forgotten_by
                .map(|b| id_from(b, "tombstone id"))
                .transpose()?,
            effective_label,
        })
    }
}

fn to_i64(n: u64) -> Result<i64, Error> {
    i64::try_from(n).map_err(|_| Error::Invalid(format!("{n} is out of range")))
}

impl StoreRead for Reader<'_> {
    fn size(&self) -> Result<u64, Error> {
        let n: i64 = self
            .0
            .prepare_cached("SELECT COALESCE(MAX(idx) + 1, 0) FROM entries")?
            .query_row([], |r| r.get(0))?;
        u64::try_from(n).map_err(|_| Error::Integrity("negative log size".into()))
    }

    fn entry_by_id(&self, id: &EntryId) -> Result<Option<StoredEntry>, Error> {
        let sql = format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE e.id = ?1");
        self.0
            .prepare_cached(&sql)?
            .query_row([id.as_bytes().as_slice()], row_to_entry)
            .optional()?
            .map(RawRow::into_entry)
            .transpose()
    }

    fn entry_by_index(&self, index: u64) -> Result<Option<StoredEntry>, Error> {
        let sql = format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE e.idx = ?1");
        self.0
            .prepare_cached(&sql)?
            .query_row([to_i64(index)?], row_to_entry)
            .optional()?
            .map(RawRow::into_entry)
            .transpose()
    }

    fn entries(&self, start: u64, limit: u64) -> Result<Vec<StoredEntry>, Error> {
        let sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE e.idx >= ?1 ORDER BY e.idx LIMIT ?2"
        );
        let mut stmt = self.0.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            params![to_i64(start)?, to_i64(limit.min(i64::MAX as u64))?],
            row_to_entry,
        )?;
        rows.map(|r| r.map_err(Error::from).and_then(RawRow::into_entry))
            .collect()
    }

    /// One statement per bucket of indices (`sqlite/entries.rs`).
    fn entries_by_index(&self, indices: &[u64]) -> Result<Vec<Option<StoredEntry>>, Error> {
        entries::by_index(self.0, indices)
    }

    /// One statement per bucket of ids (`sqlite/entries.rs`).
    fn entries_by_id(&self, ids: &[EntryId]) -> Result<Vec<Option<StoredEntry>>, Error> {
        entries::by_id(self.0, ids)
    }

    /// One statement for the whole list (`sqlite/nodes.rs`).
    fn nodes(&self, ids: &[NodeId]) -> Result<Vec<Hash256>, Error> {
        nodes::read_many(self.0, ids)
    }

    fn children(&self, id: &EntryId) -> Result<Vec<(EntryId, Weight)>, Error> {
        let mut stmt = self
            .0
            .prepare_cached("SELECT child, weight FROM edges WHERE parent = ?1 ORDER BY child")?;
        let rows = stmt.query_map([id.as_bytes().as_slice()], |r| {
            Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, i64>(1)?))
        })?;
        rows.map(|r| {
            let (child, w) = r?;
            let w = u16::try_from(w)
                .ok()
                .and_then(Weight::from_bp)
                .ok_or_else(|| Error::Integrity(format!("edge weight {w} out of range")))?;
            Ok((id_from(child, "edge child")?, w))
        })
        .collect()
    }

    fn indices_by_writer(&self, writer: &str) -> Result<Vec<u64>, Error> {
        let mut stmt = self
            .0
            .prepare_cached("SELECT idx FROM entries WHERE writer = ?1 ORDER BY idx")?;
        let rows = stmt.query_map([writer], |r| r.get::<_, i64>(0))?;
        rows.map(|r| {
            let i = r?;
            u64::try_from(i).map_err(|_| Error::Integrity("negative index".into()))
        })
        .collect()
    }

    fn registry_records(&self, from: u64) -> Result<Vec<RegistryRecord>, Error> {
        self.control_records(EntryKind::Registry, from)
    }

    fn latest_checkpoint(&self) -> Result<Option<String>, Error> {
        Ok(self
            .0
            .prepare_cached("SELECT note FROM checkpoints ORDER BY size DESC LIMIT 1")?
            .query_row([], |r| r.get(0))
            .optional()?)
    }

    fn checkpoint_notes(&self, max_size: u64, limit: usize) -> Result<Vec<(u64, String)>, Error> {
        let mut stmt = self.0.prepare_cached(
            "SELECT size, note FROM checkpoints WHERE size <= ?1 ORDER BY size DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(
            params![
                to_i64(max_size.min(i64::MAX as u64))?,
                to_i64((limit as u64).min(i64::MAX as u64))?
            ],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
        )?;
        let mut out = Vec::new();
        for row in rows {
            let (size, note) = row?;
            out.push((
                u64::try_from(size)
                    .map_err(|_| Error::Integrity("negative checkpoint size".into()))?,
                note,
            ));
        }
        Ok(out)
    }

    /// FTS5 ranks, the scope filter tests the best matches (`sqlite/search.rs`).
    fn search(&self, query: &str, scope: &str, limit: usize) -> Result<Vec<u64>, Error> {
        search::search(self.0, query, scope, limit)
    }

    fn setting(&self, key: &str) -> Result<Option<String>, Error> {
        Ok(self
            .0
            .prepare_cached("SELECT value FROM settings WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?)
    }

    fn index_rows(&self, start: u64, limit: u64) -> Result<Vec<IndexRow>, Error> {
        let mut stmt = self.0.prepare_cached(
            "SELECT e.idx, e.scope, e.writer, e.kind, e.label, f.erased FROM entries e \
             LEFT JOIN forgotten f ON f.id = e.id WHERE e.idx >= ?1 ORDER BY e.idx LIMIT ?2",
        )?;
        let rows = stmt.query_map(
            params![to_i64(start)?, to_i64(limit.min(i64::MAX as u64))?],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Option<i64>>(5)?,
                ))
            },
        )?;
        rows.map(|r| {
            let (index, scope, writer, kind, label, erased) = r?;
            Ok(IndexRow {
                index: u64::try_from(index)
                    .map_err(|_| Error::Integrity("negative leaf index".into()))?,
                scope,
                writer,
                kind,
                label,
                erased: erased.map(|e| e != 0),
            })
        })
        .collect()
    }

    fn control_records(&self, kind: EntryKind, from: u64) -> Result<Vec<RegistryRecord>, Error> {
        let mut stmt = self.0.prepare_cached(
            "SELECT e.idx, e.leaf, c.bytes FROM entries e LEFT JOIN content c ON c.idx = e.idx \
             WHERE e.kind = ?1 AND e.idx >= ?2 ORDER BY e.idx",
        )?;
        let rows = stmt.query_map(params![kind.as_str(), to_i64(from)?], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Vec<u8>>(1)?,
                r.get::<_, Option<Vec<u8>>>(2)?,
            ))
        })?;
        rows.map(|r| {
            let (i, leaf, content) = r?;
            let i = u64::try_from(i).map_err(|_| Error::Integrity("negative index".into()))?;
            let content = content.ok_or_else(|| {
                Error::Integrity(format!(
                    "{kind} record at index {i} has no content (control records are never erased)"
                ))
            })?;
            Ok(RegistryRecord {
                index: i,
                leaf,
                content,
            })
        })
        .collect()
    }

    /// From the `label` column (the copy `verify` audits) and the `effective` table, in one
    /// indexed lookup: no leaf is read or decoded.
    fn labels_by_id(&self, id: &EntryId) -> Result<Option<super::EntryLabels>, Error> {
        let row = self
            .0
            .prepare_cached(
                "SELECT e.idx, e.label, x.label FROM entries e \
                 LEFT JOIN effective x ON x.id = e.id WHERE e.id = ?1",
            )?
            .query_row([id.as_bytes().as_slice()], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                ))
            })
            .optional()?;
        let Some((index, signed, effective)) = row else {
            return Ok(None);
        };
        let parse = |s: &str, what: &str| {
            s.parse::<TrustLabel>()
                .map_err(|e| Error::Integrity(format!("{what}: {e}")))
        };
        Ok(Some(super::EntryLabels {
            index: u64::try_from(index)
                .map_err(|_| Error::Integrity("negative leaf index".into()))?,
            signed: parse(&signed, "label")?,
            effective: effective
                .as_deref()
                .map(|e| parse(e, "effective label"))
                .transpose()?,
        }))
    }

    /// One primary-key lookup per edge, under one lock.
    fn edge_weights(&self, edges: &[(EntryId, EntryId)]) -> Result<Vec<Option<Weight>>, Error> {
        let mut stmt = self
            .0
            .prepare_cached("SELECT weight FROM edges WHERE parent = ?1 AND child = ?2")?;
        edges
            .iter()
            .map(|(parent, child)| {
                let w: Option<i64> = stmt
                    .query_row(
                        params![parent.as_bytes().as_slice(), child.as_bytes().as_slice()],
                        |r| r.get(0),
                    )
                    .optional()?;
                w.map(|w| {
                    u16::try_from(w)
                        .ok()
                        .and_then(Weight::from_bp)
                        .ok_or_else(|| Error::Integrity(format!("edge weight {w} out of range")))
                })
                .transpose()
            })
            .collect()
    }

    fn edge_count(&self) -> Result<Option<u64>, Error> {
        let n: i64 = self
            .0
            .prepare_cached("SELECT count(*) FROM edges")?
            .query_row([], |r| r.get(0))?;
        Ok(Some(u64::try_from(n).map_err(|_| {
            Error::Integrity("negative edge count".into())
        })?))
    }
}

macro_rules! delegate_read {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        impl StoreRead for SqliteStore {
            $(fn $name(&self, $($arg: $ty),*) -> $ret {
                self.with(|c| Reader(c).$name($($arg),*))
            })*
        }
    };
}

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

impl Store for SqliteStore {
    fn append(&self, records: &[NewRecord], guard: &mut AppendGuard<'_>) -> Result<u64, Error> {
        let mut conn = self.conn.lock().map_err(|_| {
            Error::Store("store mutex poisoned by a panic in another thread".into())
        })?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let first = Reader(&tx).size()?;
        let effects = guard(&Reader(&tx), first, records)?;
        {
            let mut ins_entry = tx.prepare_cached(
                "INSERT INTO entries (idx, id, leaf, scope, writer, kind, label) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            let mut ins_content =
                tx.prepare_cached("INSERT INTO content (idx, bytes) VALUES (?1, ?2)")?;
            let mut ins_edge = tx.prepare_cached(
                "INSERT OR IGNORE INTO edges (parent, child, weight) VALUES (?1, ?2, ?3)",
            )?;
            let mut ins_node =
                tx.prepare_cached("INSERT INTO nodes (level, idx, hash) VALUES (?1, ?2, ?3)")?;
            let mut ins_fts =
                tx.prepare_cached("INSERT INTO search (rowid, text) VALUES (?1, ?2)")?;
            let mut get_node =
                tx.prepare_cached("SELECT hash FROM nodes WHERE level = ?1 AND idx = ?2")?;
            // Nodes written in this batch, so that completing a subtree needs no re-read.
            let mut fresh: HashMap<NodeId, Hash256> = HashMap::new();
            for (offset, rec) in records.iter().enumerate() {
                let index = first + offset as u64;
                let idx = to_i64(index)?;
                let body = rec.entry.body();
                let leaf = rec.entry.to_leaf();
                let id = rec.entry.id();
                ins_entry.execute(params![
                    idx,
                    id.as_bytes().as_slice(),
                    leaf,
                    body.scope.as_str(),
                    body.writer,
                    body.kind.as_str(),
                    body.label.as_str()
                ])?;
                ins_content.execute(params![idx, rec.content])?;
                for p in &body.parents {
                    ins_edge.execute(params![
                        p.id.as_bytes().as_slice(),
                        id.as_bytes().as_slice(),
                        p.weight.bp()
                    ])?;
                }
                if let Some(text) = &rec.search_text {
                    ins_fts.execute(params![idx, text])?;
                }
                let leaf_node = NodeId { level: 0, index };
                let lh = merkle::leaf_hash(&leaf);
                ins_node.execute(params![0, idx, lh.0.as_slice()])?;
                fresh.insert(leaf_node, lh);
                for node in merkle::completed_by_append(index) {
                    let (l, r) = node.children().ok_or_else(|| {
                        Error::Integrity("a completed node has no children".into())
                    })?;
                    let mut fetch = |n: NodeId| -> Result<Hash256, Error> {
                        if let Some(h) = fresh.get(&n) {
                            return Ok(*h);
                        }
                        let h: Vec<u8> = get_node
                            .query_row(params![n.level, to_i64(n.index)?], |r| r.get(0))
                            .optional()?
                            .ok_or_else(|| {
                                Error::Integrity(format!(
                                    "Merkle node (level {}, index {}) is missing",
                                    n.level, n.index
                                ))
                            })?;
                        Hash256::from_slice(&h)
                            .ok_or_else(|| Error::Integrity("Merkle node is not 32 bytes".into()))
                    };
                    let h = merkle::node_hash(&fetch(l)?, &fetch(r)?);
                    ins_node.execute(params![node.level, to_i64(node.index)?, h.0.as_slice()])?;
                    fresh.insert(node, h);
                }
            }
            for effect in effects {
                apply_effect(&tx, &effect)?;
            }
        }
        tx.commit()?;
        self.committed();
        Ok(first)
    }

    fn save_checkpoint(&self, size: u64, note: &str) -> Result<(), Error> {
        self.with(|c| {
            c.execute(
                "INSERT OR REPLACE INTO checkpoints (size, note) VALUES (?1, ?2)",
                params![to_i64(size)?, note],
            )?;
            Ok(())
        })?;
        self.committed();
        Ok(())
    }

    fn set_setting(&self, key: &str, value: &str) -> Result<(), Error> {
        self.with(|c| {
            c.execute(
                "INSERT OR REPLACE INTO settings (key, value) VALUES (?1, ?2)",
                params![key, value],
            )?;
            Ok(())
        })?;
        self.committed();
        Ok(())
    }
}

fn apply_effect(tx: &Connection, effect: &Effect) -> Result<(), Error> {
    match effect {
        Effect::Forget {
            target,
            tombstone,
            erase,
        } => {
            let idx: Option<i64> = tx
                .prepare_cached("SELECT idx FROM entries WHERE id = ?1")?
                .query_row([target.as_bytes().as_slice()], |r| r.get(0))
                .optional()?;
            let idx = idx.ok_or(Error::NotFound(*target))?;
            // The latest tombstone is recorded; erasure is sticky (a later tombstone without
            // `erase` never flips it back: the bytes are gone).
            tx.prepare_cached(
                "INSERT INTO forgotten (id, tombstone, erased) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (id) DO UPDATE SET tombstone = excluded.tombstone, \
                 erased = MAX(erased, excluded.erased)",
            )?
            .execute(params![
                target.as_bytes().as_slice(),
                tombstone.as_bytes().as_slice(),
                *erase
            ])?;
            tx.prepare_cached("DELETE FROM search WHERE rowid = ?1")?
                .execute([idx])?;
            if *erase {
                tx.prepare_cached("UPDATE content SET bytes = NULL WHERE idx = ?1")?
                    .execute([idx])?;
            }
        }
        Effect::RaiseLabel { id, label } => {
            tx.prepare_cached("INSERT OR REPLACE INTO effective (id, label) VALUES (?1, ?2)")?
                .execute(params![id.as_bytes().as_slice(), label.as_str()])?;
        }
    }
    Ok(())
}
