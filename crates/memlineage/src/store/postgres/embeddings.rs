//! The `embeddings` table on PostgreSQL (schema version 5): stored vectors of entry contents,
//! a derived table as in the SQLite store (`sqlite/embeddings.rs`): nothing in it is signed,
//! the handle checks each row's binding to its entry before it uses the vector and embeds again
//! what is missing or does not check (`docs/retrieval.md`, "Stored embeddings").
//!
//! The nearest-neighbour index stays in the handle (usearch HNSW, built from these rows on
//! open), as for SQLite: pgvector, the PostgreSQL extension for it, is not packaged by the
//! Debian release the project builds on, and an index in the server would rank only — every hit
//! is verified by the handle whatever found it.

use super::conn::Conn;
use super::read::{index_from, to_i64};
use crate::error::Error;
use crate::store::rows::EmbeddingRow;
use memlineage_core::Hash256;

/// The rows of `model` with index in `[start, start + limit)`, in index order.
pub(super) fn read(
    conn: &mut Conn,
    model: &str,
    start: u64,
    limit: u64,
) -> Result<Vec<EmbeddingRow>, Error> {
    let end = start.saturating_add(limit).min(i64::MAX as u64);
    let rows = conn.query(
        "SELECT idx, vector, binding FROM embeddings \
         WHERE model = $1 AND idx >= $2 AND idx < $3 ORDER BY idx",
        &[&model, &to_i64(start)?, &to_i64(end)?],
    )?;
    rows.iter()
        .map(|r| {
            let binding: Vec<u8> = r.try_get(2)?;
            // A row edited to another length is returned as a binding the handle's check
            // refuses (the entry is then embedded again), not as an error that stops the index.
            let binding = <[u8; 32]>::try_from(binding.as_slice()).unwrap_or([0; 32]);
            Ok(EmbeddingRow {
                index: index_from(r.try_get(0)?)?,
                model: model.to_string(),
                vector: r.try_get(1)?,
                binding: Hash256(binding),
            })
        })
        .collect()
}

/// The models of the stored rows, sorted, each once.
pub(super) fn models(conn: &mut Conn) -> Result<Vec<String>, Error> {
    conn.query("SELECT DISTINCT model FROM embeddings ORDER BY model", &[])?
        .iter()
        .map(|r| r.try_get(0).map_err(Error::from))
        .collect()
}

/// Inserts or replaces `rows`, each only when its entry is in the log and not forgotten, in one
/// transaction on `conn`. The transaction first takes the log head in share mode: it waits for
/// an append in progress (a tombstone that forgets one of these entries among it) and holds the
/// next one off until it commits, so the check and the insert see the same forgotten rows and an
/// embedding computed before a concurrent tombstone never outlives it (the tombstone's append
/// deletes the rows of the entries it forgets).
pub(super) fn save(conn: &mut Conn, rows: &[EmbeddingRow]) -> Result<(), Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let idx: Vec<i64> = rows
        .iter()
        .map(|r| to_i64(r.index))
        .collect::<Result<_, _>>()?;
    let models: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
    let vectors: Vec<&[u8]> = rows.iter().map(|r| r.vector.as_slice()).collect();
    let bindings: Vec<&[u8]> = rows.iter().map(|r| r.binding.0.as_slice()).collect();
    conn.batch("BEGIN ISOLATION LEVEL READ COMMITTED")?;
    let done = (|| -> Result<(), Error> {
        conn.query("SELECT 1 FROM log_head WHERE one FOR SHARE", &[])?;
        // A multi-row upsert may not touch a row twice: the last row per (model, index) wins,
        // as consecutive single-row saves would.
        conn.execute(
            "INSERT INTO embeddings (idx, model, vector, binding) \
             SELECT DISTINCT ON (r.model, r.idx) r.idx, r.model, r.vector, r.binding \
             FROM unnest($1::int8[], $2::text[], $3::bytea[], $4::bytea[]) \
                  WITH ORDINALITY AS r(idx, model, vector, binding, ord) \
             JOIN entries e ON e.idx = r.idx \
             WHERE NOT EXISTS (SELECT 1 FROM forgotten f WHERE f.id = e.id) \
             ORDER BY r.model, r.idx, r.ord DESC \
             ON CONFLICT (model, idx) DO UPDATE \
             SET vector = excluded.vector, binding = excluded.binding",
            &[&idx, &models, &vectors, &bindings],
        )?;
        Ok(())
    })();
    match done {
        Ok(()) => conn.batch("COMMIT"),
        Err(e) => {
            let _ = conn.batch("ROLLBACK");
            Err(e)
        }
    }
}
