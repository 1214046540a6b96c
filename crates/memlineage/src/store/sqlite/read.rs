//! The read queries, over any connection or transaction (autocommit reads, a snapshot, the
//! append transaction).

use super::nodes::NodeTable;
use super::value_tail::Tail;
use super::{embeddings, entries, ids, nodes, search, to_i64};
use crate::error::{Error, IntegrityCheck};
use crate::store::backend::{BackendRead, TextIndex};
use crate::store::rows::{
    ControlRecord, EmbeddingRow, EntryLabels, IndexRow, StoredEntry, StoredNote,
};
use crate::store::text::SearchTerms;
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::gate::ValueKey;
use memlineage_core::label::{TrustLabel, Weight};
use memlineage_core::merkle::NodeId;
use memlineage_core::{EntryId, Hash256};
use rusqlite::{Connection, OptionalExtension, params};

/// Read queries over one connection, with the store's copy of the value index's tail and
/// what it learned of the table of Merkle nodes.
pub(in crate::store) struct Reader<'a>(
    pub(in crate::store) &'a Connection,
    pub(in crate::store) &'a Tail,
    pub(in crate::store) &'a NodeTable,
);

pub(super) const ENTRY_COLUMNS: &str = "e.idx, e.id, e.leaf, c.bytes, f.tombstone, x.label";
pub(super) const ENTRY_FROM: &str = "entries e LEFT JOIN content c ON c.idx = e.idx \
     LEFT JOIN forgotten f ON f.id = e.id LEFT JOIN effective x ON x.id = e.id";

pub(super) fn stored(what: impl Into<String>) -> Error {
    Error::integrity(IntegrityCheck::StoredValue, what)
}

pub(super) fn id_from(bytes: Vec<u8>, what: &str) -> Result<EntryId, Error> {
    Hash256::from_slice(&bytes)
        .map(EntryId)
        .ok_or_else(|| stored(format!("{what} is not 32 bytes")))
}

pub(super) fn index_from(i: i64) -> Result<u64, Error> {
    u64::try_from(i).map_err(|_| stored(format!("leaf index {i} is negative")))
}

fn weight_from(w: i64) -> Result<Weight, Error> {
    u16::try_from(w)
        .ok()
        .and_then(Weight::from_bp)
        .ok_or_else(|| stored(format!("edge weight {w} out of range")))
}

fn label_from(s: &str, what: &str) -> Result<TrustLabel, Error> {
    s.parse::<TrustLabel>()
        .map_err(|e| stored(format!("{what}: {e}")))
}

pub(super) fn row_to_entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        index: row.get(0)?,
        id: row.get(1)?,
        leaf: row.get(2)?,
        content: row.get(3)?,
        forgotten_by: row.get(4)?,
        effective: row.get(5)?,
    })
}

/// An `entries` row with its joins, as read.
pub(super) struct RawRow {
    pub(super) index: i64,
    pub(super) id: Vec<u8>,
    pub(super) leaf: Vec<u8>,
    pub(super) content: Option<Vec<u8>>,
    pub(super) forgotten_by: Option<Vec<u8>>,
    pub(super) effective: Option<String>,
}

impl RawRow {
    pub(super) fn into_entry(self) -> Result<StoredEntry, Error> {
        Ok(StoredEntry {
            index: index_from(self.index)?,
            id: id_from(self.id, "entry id")?,
            leaf: self.leaf,
            content: self.content,
            forgotten_by: self
                .forgotten_by
                .map(|b| id_from(b, "tombstone id"))
                .transpose()?,
            effective_label: self
                .effective
                .as_deref()
                .map(|s| label_from(s, "effective label"))
                .transpose()?,
        })
    }
}

impl BackendRead for Reader<'_> {
    fn size(&self) -> Result<u64, Error> {
        let n: i64 = self
            .0
            .prepare_cached("SELECT COALESCE(MAX(idx) + 1, 0) FROM entries")?
            .query_row([], |r| r.get(0))?;
        index_from(n)
    }

    /// Through the id index (`ids.rs`), then by leaf index.
    fn entry_by_id(&self, id: &EntryId) -> Result<Option<StoredEntry>, Error> {
        Ok(self
            .entries_by_id(std::slice::from_ref(id))?
            .pop()
            .flatten())
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

    /// One statement per bucket of indices (`entries.rs`).
    fn entries_by_index(&self, indices: &[u64]) -> Result<Vec<Option<StoredEntry>>, Error> {
        entries::by_index(self.0, indices)
    }

    /// The ids' leaf indices (`ids.rs`), then one statement per bucket of indices.
    fn entries_by_id(&self, ids: &[EntryId]) -> Result<Vec<Option<StoredEntry>>, Error> {
        ids::read_by_id(self.0, self.1, ids, |indices| {
            Ok(entries::by_index(self.0, indices)?
                .into_iter()
                .map(|e| e.map(|e| (e.id, e)))
                .collect())
        })
    }

    /// `entry_ids` and the tail's ids in one snapshot (`ids.rs`; blobs compare bytewise).
    fn ids_from(&self, from: &EntryId, limit: usize) -> Result<Vec<EntryId>, Error> {
        ids::ids_from(self.0, self.1, from, limit)
    }

    /// One statement for the whole list (`nodes.rs`).
    fn nodes(&self, ids: &[NodeId]) -> Result<Vec<Hash256>, Error> {
        nodes::read_many(self.0, self.2, ids)
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
            Ok((id_from(child, "edge child")?, weight_from(w)?))
        })
        .collect()
    }

    /// One primary-key lookup per edge, in one read.
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
                w.map(weight_from).transpose()
            })
            .collect()
    }

    fn edge_count(&self) -> Result<Option<u64>, Error> {
        let n: i64 = self
            .0
            .prepare_cached("SELECT count(*) FROM edges")?
            .query_row([], |r| r.get(0))?;
        Ok(Some(
            u64::try_from(n).map_err(|_| stored("negative edge count"))?,
        ))
    }

    fn indices_by_writer(&self, writer: &str) -> Result<Vec<u64>, Error> {
        let mut stmt = self
            .0
            .prepare_cached("SELECT idx FROM entries WHERE writer = ?1 ORDER BY idx")?;
        let rows = stmt.query_map([writer], |r| r.get::<_, i64>(0))?;
        rows.map(|r| index_from(r?)).collect()
    }

    fn control_records(&self, kind: EntryKind, from: u64) -> Result<Vec<ControlRecord>, Error> {
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
            let index = index_from(i)?;
            let content =
                content.ok_or_else(|| crate::store::provided::erased_control(kind, index))?;
            Ok(ControlRecord {
                index,
                leaf,
                content,
            })
        })
        .collect()
    }

    /// From the `label` column (the copy `verify` audits) and the `effective` table, by the
    /// entry's leaf index (`ids.rs`): no leaf is read or decoded.
    fn labels_by_id(&self, id: &EntryId) -> Result<Option<EntryLabels>, Error> {
        let found = ids::read_by_id(self.0, self.1, std::slice::from_ref(id), |indices| {
            let mut stmt = self.0.prepare_cached(
                "SELECT e.id, e.label, x.label FROM entries e \
                 LEFT JOIN effective x ON x.id = e.id WHERE e.idx = ?1",
            )?;
            let mut rows = Vec::with_capacity(indices.len());
            for &index in indices {
                let row = stmt
                    .query_row([to_i64(index)?], |r| {
                        Ok((
                            r.get::<_, Vec<u8>>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, Option<String>>(2)?,
                        ))
                    })
                    .optional()?;
                rows.push(match row {
                    None => None,
                    Some((id, signed, effective)) => Some((
                        id_from(id, "entry id")?,
                        EntryLabels {
                            index,
                            signed: label_from(&signed, "label")?,
                            effective: effective
                                .as_deref()
                                .map(|e| label_from(e, "effective label"))
                                .transpose()?,
                        },
                    )),
                });
            }
            Ok(rows)
        })?;
        Ok(found.into_iter().next().flatten())
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
                index: index_from(index)?,
                scope,
                writer,
                kind,
                label,
                erased: erased.map(|e| e != 0),
            })
        })
        .collect()
    }

    fn latest_checkpoint(&self) -> Result<Option<String>, Error> {
        Ok(self
            .0
            .prepare_cached("SELECT note FROM checkpoints ORDER BY size DESC LIMIT 1")?
            .query_row([], |r| r.get(0))
            .optional()?)
    }

    fn checkpoint_notes(&self, max_size: u64, limit: usize) -> Result<Vec<StoredNote>, Error> {
        let max = i64::try_from(max_size).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = self.0.prepare_cached(
            "SELECT size, note FROM checkpoints WHERE size <= ?1 ORDER BY size DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![max, limit], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })?;
        rows.map(|r| {
            let (size, note) = r?;
            let size = u64::try_from(size)
                .map_err(|_| stored(format!("checkpoint size {size} is negative")))?;
            Ok(StoredNote { size, note })
        })
        .collect()
    }

    fn setting(&self, key: &str) -> Result<Option<String>, Error> {
        Ok(self
            .0
            .prepare_cached("SELECT value FROM settings WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?)
    }

    fn text_index(&self) -> &dyn TextIndex {
        self
    }

    fn embeddings(&self, model: &str, start: u64, limit: u64) -> Result<Vec<EmbeddingRow>, Error> {
        embeddings::read(self.0, model, start, limit)
    }
    fn embedding_models(&self) -> Result<Vec<String>, Error> {
        embeddings::models(self.0)
    }

    fn value_carriers(&self, key: &ValueKey, from: u64, limit: usize) -> Result<Vec<u64>, Error> {
        super::values::carriers(self.0, self.1, key, from, limit)
    }
}

/// FTS5 ranks, the scope filter tests the best matches (`search.rs`).
impl TextIndex for Reader<'_> {
    fn search(&self, terms: &SearchTerms, scope: &Scope, limit: usize) -> Result<Vec<u64>, Error> {
        search::search(self.0, terms, scope.as_str(), limit)
    }
}
