//! The `embeddings` table: stored vectors of entry contents, a derived table (nothing in it is
//! signed; the handle checks each row's binding before it uses the vector, and embeds again
//! what is missing or does not check). `docs/retrieval.md`, "Stored embeddings".

use super::read::index_from;
use super::to_i64;
use crate::error::Error;
use crate::store::rows::EmbeddingRow;
use memlineage_core::Hash256;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, params};

/// The rows of `model` with index in `[start, start + limit)`, in index order.
pub(super) fn read(
    conn: &Connection,
    model: &str,
    start: u64,
    limit: u64,
) -> Result<Vec<EmbeddingRow>, Error> {
    let end = start.saturating_add(limit).min(i64::MAX as u64);
    let mut stmt = conn.prepare_cached(
        "SELECT idx, vector, binding FROM embeddings \
         WHERE model = ?1 AND idx >= ?2 AND idx < ?3 ORDER BY idx",
    )?;
    let rows = stmt.query_map(params![model, to_i64(start)?, to_i64(end)?], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            bytes(r.get_ref(1)?),
            bytes(r.get_ref(2)?),
        ))
    })?;
    rows.map(|row| {
        let (idx, vector, binding) = row?;
        // A row edited to another type or length is returned as bytes the binding check
        // refuses (the entry is then embedded again), not as an error that stops the index.
        let binding = <[u8; 32]>::try_from(binding.as_slice()).unwrap_or([0; 32]);
        Ok(EmbeddingRow {
            index: index_from(idx)?,
            model: model.to_string(),
            vector,
            binding: Hash256(binding),
        })
    })
    .collect()
}

/// The models of the stored rows, sorted, each once.
pub(super) fn models(conn: &Connection) -> Result<Vec<String>, Error> {
    let mut stmt = conn.prepare_cached("SELECT DISTINCT model FROM embeddings ORDER BY model")?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The bytes of a blob or text value (text unchecked: it may not be UTF-8); nothing for any
/// other type.
fn bytes(v: ValueRef<'_>) -> Vec<u8> {
    match v {
        ValueRef::Blob(b) | ValueRef::Text(b) => b.to_vec(),
        _ => Vec::new(),
    }
}

/// Inserts or replaces `rows`, each only when its entry is in the log and not forgotten (in
/// the caller's write transaction, so a tombstone committed first wins).
pub(super) fn save(tx: &Connection, rows: &[EmbeddingRow]) -> Result<(), Error> {
    let mut put = tx.prepare_cached(
        "INSERT OR REPLACE INTO embeddings (idx, model, vector, binding) \
         SELECT e.idx, ?2, ?3, ?4 FROM entries e \
         WHERE e.idx = ?1 AND NOT EXISTS (SELECT 1 FROM forgotten f WHERE f.id = e.id)",
    )?;
    for row in rows {
        put.execute(params![
            to_i64(row.index)?,
            row.model,
            row.vector,
            row.binding.0.as_slice()
        ])?;
    }
    Ok(())
}
