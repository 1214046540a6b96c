//! Writing one [`AppendBatch`] inside the append transaction, stage by stage ([`WriteStage`]).
//!
//! Every table gets one multi-row `INSERT … SELECT FROM unnest(…)` per batch, its columns sent
//! as arrays: a batch of 256 entries is a handful of statements (one round trip each), not
//! thousands. The rows arrive computed by the handle; this only writes them.

use super::conn::Conn;
use super::read::to_i64;
use super::search::Document;
use crate::error::Error;
use crate::store::backend::{AppendGuard, WriteStage};
use crate::store::rows::AppendBatch;
use memlineage_core::EntryId;
use std::collections::HashMap;

/// Writes `batch`, calling the guard at each stage. The caller commits.
pub(super) fn write(
    conn: &mut Conn,
    batch: &AppendBatch,
    guard: &mut AppendGuard<'_>,
) -> Result<(), Error> {
    settings(conn, batch)?;
    entries(conn, batch)?;
    search_documents(conn, batch)?;
    values(conn, batch)?;
    guard.reached(WriteStage::Entries)?;
    nodes(conn, batch)?;
    guard.reached(WriteStage::Nodes)?;
    edges(conn, batch)?;
    forgotten(conn, batch)?;
    raised(conn, batch)?;
    guard.reached(WriteStage::Derived)?;
    let size = to_i64(batch.first + batch.entries.len() as u64)?;
    conn.execute("UPDATE log_head SET size = $1 WHERE one", &[&size])?;
    guard.reached(WriteStage::Commit)
}

fn settings(conn: &mut Conn, batch: &AppendBatch) -> Result<(), Error> {
    if batch.settings.is_empty() {
        return Ok(());
    }
    let keys: Vec<&str> = batch.settings.iter().map(|(k, _)| k.as_str()).collect();
    let values: Vec<&str> = batch.settings.iter().map(|(_, v)| v.as_str()).collect();
    conn.execute(
        "INSERT INTO settings (key, value) SELECT * FROM unnest($1::text[], $2::text[])",
        &[&keys, &values],
    )?;
    Ok(())
}

fn entries(conn: &mut Conn, batch: &AppendBatch) -> Result<(), Error> {
    if batch.entries.is_empty() {
        return Ok(());
    }
    let es = &batch.entries;
    let idx: Vec<i64> = es
        .iter()
        .map(|e| to_i64(e.index))
        .collect::<Result<_, _>>()?;
    let ids: Vec<&[u8]> = es.iter().map(|e| e.id.as_bytes().as_slice()).collect();
    let leaves: Vec<&[u8]> = es.iter().map(|e| e.leaf.as_slice()).collect();
    let scopes: Vec<&str> = es.iter().map(|e| e.scope.as_str()).collect();
    let writers: Vec<&str> = es.iter().map(|e| e.writer.as_str()).collect();
    let kinds: Vec<&str> = es.iter().map(|e| e.kind.as_str()).collect();
    let labels: Vec<&str> = es.iter().map(|e| e.label.as_str()).collect();
    let contents: Vec<&[u8]> = es.iter().map(|e| e.content.as_slice()).collect();
    conn.execute(
        "INSERT INTO entries (idx, id, leaf, scope, writer, kind, label) \
         SELECT * FROM unnest($1::int8[], $2::bytea[], $3::bytea[], $4::text[], $5::text[], \
                              $6::text[], $7::text[])",
        &[&idx, &ids, &leaves, &scopes, &writers, &kinds, &labels],
    )?;
    conn.execute(
        "INSERT INTO content (idx, bytes) SELECT * FROM unnest($1::int8[], $2::bytea[])",
        &[&idx, &contents],
    )?;
    Ok(())
}

/// The value-index rows of the new entries (issue 19).
fn values(conn: &mut Conn, batch: &AppendBatch) -> Result<(), Error> {
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut idx: Vec<i64> = Vec::new();
    for e in &batch.entries {
        for k in &e.values {
            keys.push(k.as_bytes().as_slice());
            idx.push(to_i64(e.index)?);
        }
    }
    insert_values(conn, &keys, &idx)
}

/// Inserts value-index rows (present ones are kept: the rows are a set).
pub(super) fn insert_values(conn: &mut Conn, keys: &[&[u8]], idx: &[i64]) -> Result<(), Error> {
    if keys.is_empty() {
        return Ok(());
    }
    conn.execute(
        "INSERT INTO value_keys (key, idx) SELECT * FROM unnest($1::bytea[], $2::int8[]) \
         ON CONFLICT DO NOTHING",
        &[&keys, &idx],
    )?;
    Ok(())
}

/// The full-text documents of the new entries, and the live totals BM25 uses.
fn search_documents(conn: &mut Conn, batch: &AppendBatch) -> Result<(), Error> {
    let mut doc_idx: Vec<i64> = Vec::new();
    let mut doc_scope: Vec<&str> = Vec::new();
    let mut doc_len: Vec<i32> = Vec::new();
    let (mut term_idx, mut term, mut tf): (Vec<i64>, Vec<String>, Vec<i32>) =
        (Vec::new(), Vec::new(), Vec::new());
    for e in &batch.entries {
        let Some(text) = &e.search_text else {
            continue;
        };
        let idx = to_i64(e.index)?;
        let doc = Document::of(text);
        doc_idx.push(idx);
        doc_scope.push(&e.scope);
        doc_len.push(doc.len);
        for (t, n) in doc.terms {
            term_idx.push(idx);
            term.push(t);
            tf.push(n);
        }
    }
    if doc_idx.is_empty() {
        return Ok(());
    }
    conn.execute(
        "WITH ins AS (
             INSERT INTO search (idx, scope, len, terms, tfs)
             SELECT d.idx, d.scope, d.len, COALESCE(t.terms, '{}'), COALESCE(t.tfs, '{}')
             FROM unnest($1::int8[], $2::text[], $3::int4[]) AS d(idx, scope, len)
             LEFT JOIN (
                 SELECT x.idx, array_agg(x.term ORDER BY x.n) AS terms,
                        array_agg(x.tf ORDER BY x.n) AS tfs
                 FROM unnest($4::int8[], $5::text[], $6::int4[]) WITH ORDINALITY AS x(idx, term, tf, n)
                 GROUP BY x.idx
             ) t ON t.idx = d.idx
             RETURNING len
         )
         UPDATE search_stats SET docs = docs + (SELECT count(*) FROM ins),
                                 length = length + (SELECT COALESCE(sum(len), 0) FROM ins)
         WHERE one",
        &[&doc_idx, &doc_scope, &doc_len, &term_idx, &term, &tf],
    )?;
    Ok(())
}

fn nodes(conn: &mut Conn, batch: &AppendBatch) -> Result<(), Error> {
    if batch.nodes.is_empty() {
        return Ok(());
    }
    let levels: Vec<i16> = batch
        .nodes
        .iter()
        .map(|(n, _)| i16::from(n.level))
        .collect();
    let idx: Vec<i64> = batch
        .nodes
        .iter()
        .map(|(n, _)| to_i64(n.index))
        .collect::<Result<_, _>>()?;
    let hashes: Vec<&[u8]> = batch.nodes.iter().map(|(_, h)| h.0.as_slice()).collect();
    conn.execute(
        "INSERT INTO nodes (level, idx, hash) \
         SELECT * FROM unnest($1::int2[], $2::int8[], $3::bytea[])",
        &[&levels, &idx, &hashes],
    )?;
    Ok(())
}

fn edges(conn: &mut Conn, batch: &AppendBatch) -> Result<(), Error> {
    if batch.edges.is_empty() {
        return Ok(());
    }
    let parents: Vec<&[u8]> = batch
        .edges
        .iter()
        .map(|e| e.parent.as_bytes().as_slice())
        .collect();
    let children: Vec<&[u8]> = batch
        .edges
        .iter()
        .map(|e| e.child.as_bytes().as_slice())
        .collect();
    let weights: Vec<i32> = batch
        .edges
        .iter()
        .map(|e| i32::from(e.weight.bp()))
        .collect();
    conn.execute(
        "INSERT INTO edges (parent, child, weight) \
         SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::int4[]) ON CONFLICT DO NOTHING",
        &[&parents, &children, &weights],
    )?;
    Ok(())
}

/// The last value for each key, in the order keys first appeared (a multi-row upsert may not
/// touch a row twice).
fn last_per_key<T: Copy>(rows: impl Iterator<Item = (EntryId, T)>) -> Vec<(EntryId, T)> {
    let mut at: HashMap<EntryId, usize> = HashMap::new();
    let mut out: Vec<(EntryId, T)> = Vec::new();
    for (k, v) in rows {
        match at.get(&k) {
            Some(&i) => out[i].1 = v,
            None => {
                at.insert(k, out.len());
                out.push((k, v));
            }
        }
    }
    out
}

/// Forgotten rows (the handle made them final: erasure sticky), the targets dropped from the
/// full-text index, erased content.
fn forgotten(conn: &mut Conn, batch: &AppendBatch) -> Result<(), Error> {
    if batch.forgotten.is_empty() {
        return Ok(());
    }
    let rows = last_per_key(
        batch
            .forgotten
            .iter()
            .map(|f| (f.target, (f.tombstone, f.erased, f.target_index))),
    );
    let ids: Vec<&[u8]> = rows.iter().map(|(t, _)| t.as_bytes().as_slice()).collect();
    let tombstones: Vec<&[u8]> = rows
        .iter()
        .map(|(_, (t, _, _))| t.as_bytes().as_slice())
        .collect();
    let erased: Vec<bool> = rows.iter().map(|(_, (_, e, _))| *e).collect();
    let targets: Vec<i64> = rows
        .iter()
        .map(|(_, (_, _, i))| to_i64(*i))
        .collect::<Result<_, _>>()?;
    let erase: Vec<i64> = rows
        .iter()
        .filter(|(_, (_, e, _))| *e)
        .map(|(_, (_, _, i))| to_i64(*i))
        .collect::<Result<_, _>>()?;
    conn.execute(
        "INSERT INTO forgotten (id, tombstone, erased) \
         SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bool[]) \
         ON CONFLICT (id) DO UPDATE SET tombstone = excluded.tombstone, erased = excluded.erased",
        &[&ids, &tombstones, &erased],
    )?;
    conn.execute(
        "WITH gone AS (DELETE FROM search WHERE idx = ANY($1::int8[]) RETURNING len)
         UPDATE search_stats SET docs = docs - (SELECT count(*) FROM gone),
                                 length = length - (SELECT COALESCE(sum(len), 0) FROM gone)
         WHERE one",
        &[&targets],
    )?;
    if !erase.is_empty() {
        conn.execute(
            "UPDATE content SET bytes = NULL WHERE idx = ANY($1::int8[])",
            &[&erase],
        )?;
    }
    Ok(())
}

fn raised(conn: &mut Conn, batch: &AppendBatch) -> Result<(), Error> {
    if batch.raised.is_empty() {
        return Ok(());
    }
    let rows = last_per_key(batch.raised.iter().copied());
    let ids: Vec<&[u8]> = rows
        .iter()
        .map(|(id, _)| id.as_bytes().as_slice())
        .collect();
    let labels: Vec<&str> = rows.iter().map(|(_, l)| l.as_str()).collect();
    conn.execute(
        "INSERT INTO effective (id, label) SELECT * FROM unnest($1::bytea[], $2::text[]) \
         ON CONFLICT (id) DO UPDATE SET label = excluded.label",
        &[&ids, &labels],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage_core::Hash256;

    #[test]
    fn the_last_value_per_key_wins_in_first_seen_order() {
        let (a, b) = (EntryId(Hash256::of(b"a")), EntryId(Hash256::of(b"b")));
        assert_eq!(
            last_per_key([(a, 1), (b, 2), (a, 3)].into_iter()),
            [(a, 3), (b, 2)]
        );
    }
}
