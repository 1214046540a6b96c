//! The read queries, over one connection: outside a transaction, in a read snapshot, or in the
//! append transaction (what the guard reads).

use super::conn::Conn;
use super::search;
use crate::error::{Error, InputError, IntegrityCheck};
use crate::store::backend::{BackendRead, TextIndex};
use crate::store::provided::{erased_control, missing_node};
use crate::store::rows::{
    ControlRecord, EmbeddingRow, EntryLabels, IndexRow, StoredEntry, StoredNote,
};
use crate::store::text::SearchTerms;
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::gate::ValueKey;
use memlineage_core::label::{TrustLabel, Weight};
use memlineage_core::merkle::NodeId;
use memlineage_core::{EntryId, Hash256};
use postgres::Row;
use std::cell::RefCell;
use std::collections::HashMap;

/// Read queries over one connection (interior mutability: a query needs the connection
/// mutably, the read traits take `&self`).
pub(super) struct Reader<'a> {
    conn: RefCell<&'a mut Conn>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(conn: &'a mut Conn) -> Reader<'a> {
        Reader {
            conn: RefCell::new(conn),
        }
    }

    /// Runs `f` with the connection.
    pub(super) fn with<R>(
        &self,
        f: impl FnOnce(&mut Conn) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let mut conn = self
            .conn
            .try_borrow_mut()
            .map_err(|_| Error::internal("a PostgreSQL reader was used re-entrantly"))?;
        f(&mut conn)
    }
}

const ENTRY_COLUMNS: &str = "SELECT e.idx, e.id, e.leaf, c.bytes, f.tombstone, x.label \
     FROM entries e LEFT JOIN content c ON c.idx = e.idx \
     LEFT JOIN forgotten f ON f.id = e.id LEFT JOIN effective x ON x.id = e.id";

fn stored(what: impl Into<String>) -> Error {
    Error::integrity(IntegrityCheck::StoredValue, what)
}

pub(super) fn to_i64(n: u64) -> Result<i64, Error> {
    i64::try_from(n).map_err(|_| InputError::OutOfRange(n).into())
}

pub(super) fn index_from(i: i64) -> Result<u64, Error> {
    u64::try_from(i).map_err(|_| stored(format!("leaf index {i} is negative")))
}

fn id_from(bytes: &[u8], what: &str) -> Result<EntryId, Error> {
    Hash256::from_slice(bytes)
        .map(EntryId)
        .ok_or_else(|| stored(format!("{what} is not 32 bytes")))
}

fn weight_from(w: i32) -> Result<Weight, Error> {
    u16::try_from(w)
        .ok()
        .and_then(Weight::from_bp)
        .ok_or_else(|| stored(format!("edge weight {w} out of range")))
}

fn label_from(s: &str, what: &str) -> Result<TrustLabel, Error> {
    s.parse::<TrustLabel>()
        .map_err(|e| stored(format!("{what}: {e}")))
}

/// A row of [`ENTRY_COLUMNS`] as a stored entry.
fn entry(row: &Row) -> Result<StoredEntry, Error> {
    let id: Vec<u8> = row.try_get(1)?;
    let tombstone: Option<Vec<u8>> = row.try_get(4)?;
    let effective: Option<String> = row.try_get(5)?;
    Ok(StoredEntry {
        index: index_from(row.try_get(0)?)?,
        id: id_from(&id, "entry id")?,
        leaf: row.try_get(2)?,
        content: row.try_get(3)?,
        forgotten_by: tombstone.map(|b| id_from(&b, "tombstone id")).transpose()?,
        effective_label: effective
            .as_deref()
            .map(|s| label_from(s, "effective label"))
            .transpose()?,
    })
}

/// The entries of `rows`, placed in the order of `keys` by `key_of` (duplicates allowed).
/// An entry's labels from a row of `idx`, `label` (the signed copy), `effective.label`.
fn labels_of(row: &Row) -> Result<EntryLabels, Error> {
    let effective: Option<String> = row.try_get(2)?;
    Ok(EntryLabels {
        index: index_from(row.try_get(0)?)?,
        signed: label_from(row.try_get(1)?, "label")?,
        effective: effective
            .as_deref()
            .map(|e| label_from(e, "effective label"))
            .transpose()?,
    })
}

fn in_order<K: std::hash::Hash + Eq>(
    rows: Vec<Row>,
    keys: &[K],
    key_of: impl Fn(&StoredEntry) -> K,
) -> Result<Vec<Option<StoredEntry>>, Error> {
    let mut found: HashMap<K, StoredEntry> = HashMap::with_capacity(rows.len());
    for row in &rows {
        let e = entry(row)?;
        found.insert(key_of(&e), e);
    }
    Ok(keys.iter().map(|k| found.get(k).cloned()).collect())
}

impl BackendRead for Reader<'_> {
    fn size(&self) -> Result<u64, Error> {
        self.with(|c| {
            let row = c.query_opt("SELECT COALESCE(max(idx) + 1, 0) FROM entries", &[])?;
            let n: i64 = match row {
                Some(r) => r.try_get(0)?,
                None => 0,
            };
            index_from(n)
        })
    }

    fn entries(&self, start: u64, limit: u64) -> Result<Vec<StoredEntry>, Error> {
        let (start, limit) = (to_i64(start)?, to_i64(limit.min(i64::MAX as u64))?);
        self.with(|c| {
            let sql = format!("{ENTRY_COLUMNS} WHERE e.idx >= $1 ORDER BY e.idx LIMIT $2");
            c.query(&sql, &[&start, &limit])?
                .iter()
                .map(entry)
                .collect()
        })
    }

    /// One statement: the distinct keys as an array, one index lookup each.
    fn entries_by_index(&self, indices: &[u64]) -> Result<Vec<Option<StoredEntry>>, Error> {
        if indices.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<i64> = indices
            .iter()
            .map(|i| to_i64(*i))
            .collect::<Result<_, _>>()?;
        let rows = self.with(|c| {
            let sql = format!("{ENTRY_COLUMNS} WHERE e.idx = ANY($1::int8[])");
            c.query(&sql, &[&keys])
        })?;
        in_order(rows, indices, |e| e.index)
    }

    fn entries_by_id(&self, ids: &[EntryId]) -> Result<Vec<Option<StoredEntry>>, Error> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<&[u8]> = ids.iter().map(|id| id.as_bytes().as_slice()).collect();
        let rows = self.with(|c| {
            let sql = format!("{ENTRY_COLUMNS} WHERE e.id = ANY($1::bytea[])");
            c.query(&sql, &[&keys])
        })?;
        in_order(rows, ids, |e| e.id)
    }

    /// A range of the unique index on `id` (bytea compares bytewise).
    fn ids_from(&self, from: &EntryId, limit: usize) -> Result<Vec<EntryId>, Error> {
        let limit = to_i64(limit as u64)?;
        let from = from.as_bytes().as_slice();
        self.with(|c| {
            c.query(
                "SELECT id FROM entries WHERE id >= $1 ORDER BY id LIMIT $2",
                &[&from, &limit],
            )?
            .iter()
            .map(|r| id_from(r.try_get::<_, &[u8]>(0)?, "entry id"))
            .collect()
        })
    }

    /// One statement for the whole list: the pairs as two arrays joined with the primary key.
    fn nodes(&self, ids: &[NodeId]) -> Result<Vec<Hash256>, Error> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let levels: Vec<i16> = ids.iter().map(|n| i16::from(n.level)).collect();
        let idx: Vec<i64> = ids
            .iter()
            .map(|n| to_i64(n.index))
            .collect::<Result<_, _>>()?;
        let rows = self.with(|c| {
            c.query(
                "SELECT n.level, n.idx, n.hash FROM nodes n \
                 JOIN (SELECT DISTINCT * FROM unnest($1::int2[], $2::int8[]) AS v(level, idx)) v \
                 ON n.level = v.level AND n.idx = v.idx",
                &[&levels, &idx],
            )
        })?;
        let mut found: HashMap<NodeId, Hash256> = HashMap::with_capacity(rows.len());
        for row in &rows {
            let (level, index): (i16, i64) = (row.try_get(0)?, row.try_get(1)?);
            let node = match (u8::try_from(level), u64::try_from(index)) {
                (Ok(level), Ok(index)) => NodeId::new(level, index),
                _ => continue,
            };
            let hash = Hash256::from_slice(row.try_get::<_, &[u8]>(2)?).ok_or_else(|| {
                Error::integrity(
                    IntegrityCheck::MerkleNode,
                    format!(
                        "Merkle node (level {}, index {}) is not 32 bytes",
                        node.level, node.index
                    ),
                )
            })?;
            found.insert(node, hash);
        }
        ids.iter()
            .map(|n| found.get(n).copied().ok_or_else(|| missing_node(n)))
            .collect()
    }

    fn children(&self, id: &EntryId) -> Result<Vec<(EntryId, Weight)>, Error> {
        let parent = id.as_bytes().as_slice();
        self.with(|c| {
            c.query(
                "SELECT child, weight FROM edges WHERE parent = $1 ORDER BY child",
                &[&parent],
            )?
            .iter()
            .map(|r| {
                Ok((
                    id_from(r.try_get::<_, &[u8]>(0)?, "edge child")?,
                    weight_from(r.try_get(1)?)?,
                ))
            })
            .collect()
        })
    }

    /// One statement: the pairs as two arrays joined with the primary key.
    fn edge_weights(&self, edges: &[(EntryId, EntryId)]) -> Result<Vec<Option<Weight>>, Error> {
        if edges.is_empty() {
            return Ok(Vec::new());
        }
        let parents: Vec<&[u8]> = edges.iter().map(|(p, _)| p.as_bytes().as_slice()).collect();
        let children: Vec<&[u8]> = edges.iter().map(|(_, c)| c.as_bytes().as_slice()).collect();
        let rows = self.with(|c| {
            c.query(
                "SELECT e.parent, e.child, e.weight FROM edges e \
                 JOIN (SELECT DISTINCT * FROM unnest($1::bytea[], $2::bytea[]) AS v(parent, child)) v \
                 ON e.parent = v.parent AND e.child = v.child",
                &[&parents, &children],
            )
        })?;
        let mut found: HashMap<(EntryId, EntryId), Weight> = HashMap::with_capacity(rows.len());
        for r in &rows {
            let parent = id_from(r.try_get::<_, &[u8]>(0)?, "edge parent")?;
            let child = id_from(r.try_get::<_, &[u8]>(1)?, "edge child")?;
            found.insert((parent, child), weight_from(r.try_get(2)?)?);
        }
        Ok(edges.iter().map(|e| found.get(e).copied()).collect())
    }

    fn edge_count(&self) -> Result<Option<u64>, Error> {
        self.with(|c| {
            let row = c.query_opt("SELECT count(*) FROM edges", &[])?;
            let n: i64 = match row {
                Some(r) => r.try_get(0)?,
                None => 0,
            };
            Ok(Some(
                u64::try_from(n).map_err(|_| stored("negative edge count"))?,
            ))
        })
    }

    fn indices_by_writer(&self, writer: &str) -> Result<Vec<u64>, Error> {
        self.with(|c| {
            c.query(
                "SELECT idx FROM entries WHERE writer = $1 ORDER BY idx",
                &[&writer],
            )?
            .iter()
            .map(|r| index_from(r.try_get(0)?))
            .collect()
        })
    }

    fn control_records(&self, kind: EntryKind, from: u64) -> Result<Vec<ControlRecord>, Error> {
        let from = to_i64(from)?;
        let kind_name = kind.as_str();
        self.with(|c| {
            c.query(
                "SELECT e.idx, e.leaf, c.bytes FROM entries e LEFT JOIN content c ON c.idx = e.idx \
                 WHERE e.kind = $1 AND e.idx >= $2 ORDER BY e.idx",
                &[&kind_name, &from],
            )?
            .iter()
            .map(|r| {
                let index = index_from(r.try_get(0)?)?;
                let content: Option<Vec<u8>> = r.try_get(2)?;
                Ok(ControlRecord {
                    index,
                    leaf: r.try_get(1)?,
                    content: content.ok_or_else(|| erased_control(kind, index))?,
                })
            })
            .collect()
        })
    }

    fn labels_by_id(&self, id: &EntryId) -> Result<Option<EntryLabels>, Error> {
        let key = id.as_bytes().as_slice();
        let row = self.with(|c| {
            c.query_opt(
                "SELECT e.idx, e.label, x.label FROM entries e \
                 LEFT JOIN effective x ON x.id = e.id WHERE e.id = $1",
                &[&key],
            )
        })?;
        row.as_ref().map(labels_of).transpose()
    }

    /// One statement for all of `ids` (`= ANY`), not one round trip each.
    fn labels_by_ids(&self, ids: &[EntryId]) -> Result<Vec<Option<EntryLabels>>, Error> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<&[u8]> = ids.iter().map(|id| id.as_bytes().as_slice()).collect();
        let rows = self.with(|c| {
            c.query(
                "SELECT e.idx, e.label, x.label, e.id FROM entries e \
                 LEFT JOIN effective x ON x.id = e.id WHERE e.id = ANY($1::bytea[])",
                &[&keys],
            )
        })?;
        let mut found: HashMap<EntryId, EntryLabels> = HashMap::with_capacity(rows.len());
        for row in &rows {
            let id = id_from(row.try_get::<_, &[u8]>(3)?, "entry id")?;
            found.insert(id, labels_of(row)?);
        }
        Ok(ids.iter().map(|id| found.get(id).copied()).collect())
    }

    fn index_rows(&self, start: u64, limit: u64) -> Result<Vec<IndexRow>, Error> {
        let (start, limit) = (to_i64(start)?, to_i64(limit.min(i64::MAX as u64))?);
        self.with(|c| {
            c.query(
                "SELECT e.idx, e.scope, e.writer, e.kind, e.label, f.erased FROM entries e \
                 LEFT JOIN forgotten f ON f.id = e.id WHERE e.idx >= $1 ORDER BY e.idx LIMIT $2",
                &[&start, &limit],
            )?
            .iter()
            .map(|r| {
                Ok(IndexRow {
                    index: index_from(r.try_get(0)?)?,
                    scope: r.try_get(1)?,
                    writer: r.try_get(2)?,
                    kind: r.try_get(3)?,
                    label: r.try_get(4)?,
                    erased: r.try_get(5)?,
                })
            })
            .collect()
        })
    }

    fn latest_checkpoint(&self) -> Result<Option<String>, Error> {
        self.with(|c| {
            c.query_opt(
                "SELECT note FROM checkpoints ORDER BY size DESC LIMIT 1",
                &[],
            )?
            .map(|r| r.try_get(0))
            .transpose()
            .map_err(Error::from)
        })
    }

    fn checkpoint_notes(&self, max_size: u64, limit: usize) -> Result<Vec<StoredNote>, Error> {
        let max = i64::try_from(max_size).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with(|c| {
            c.query(
                "SELECT size, note FROM checkpoints WHERE size <= $1 ORDER BY size DESC LIMIT $2",
                &[&max, &limit],
            )?
            .iter()
            .map(|r| {
                let size: i64 = r.try_get(0)?;
                let size = u64::try_from(size).map_err(|_| {
                    Error::integrity(
                        IntegrityCheck::Checkpoint,
                        format!("stored checkpoint size {size} is negative"),
                    )
                })?;
                Ok(StoredNote {
                    size,
                    note: r.try_get(1)?,
                })
            })
            .collect()
        })
    }

    fn setting(&self, key: &str) -> Result<Option<String>, Error> {
        self.with(|c| {
            c.query_opt("SELECT value FROM settings WHERE key = $1", &[&key])?
                .map(|r| r.try_get(0))
                .transpose()
                .map_err(Error::from)
        })
    }

    fn text_index(&self) -> &dyn TextIndex {
        self
    }

    fn embeddings(&self, model: &str, start: u64, limit: u64) -> Result<Vec<EmbeddingRow>, Error> {
        self.with(|c| super::embeddings::read(c, model, start, limit))
    }

    fn embedding_models(&self) -> Result<Vec<String>, Error> {
        self.with(super::embeddings::models)
    }

    fn value_carriers(&self, key: &ValueKey, from: u64, limit: usize) -> Result<Vec<u64>, Error> {
        let from = to_i64(from)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with(|c| {
            c.query(
                "SELECT idx FROM value_keys WHERE key = $1 AND idx >= $2 ORDER BY idx LIMIT $3",
                &[&key.as_bytes().as_slice(), &from, &limit],
            )?
            .iter()
            .map(|r| {
                let idx: i64 = r.try_get(0)?;
                u64::try_from(idx).map_err(|_| {
                    Error::integrity(
                        IntegrityCheck::StoredValue,
                        format!("value index row with negative index {idx}"),
                    )
                })
            })
            .collect()
        })
    }
}

/// BM25 over the `search` table (`search.rs`).
impl TextIndex for Reader<'_> {
    fn search(&self, terms: &SearchTerms, scope: &Scope, limit: usize) -> Result<Vec<u64>, Error> {
        self.with(|c| search::search(c, terms, scope.as_str(), limit))
    }
}
