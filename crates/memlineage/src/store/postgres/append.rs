//! Writing one [`AppendBatch`] inside the append transaction, stage by stage ([`WriteStage`]).
//!
//! New full-text documents go to `search_recent`, a table without a GIN index (schema version
//! 6): settling them into the indexed partitions happens after the commit (`pending.rs`).
//!
//! Every table gets one multi-row `INSERT … SELECT FROM unnest(…)` per batch, its columns sent
//! as arrays, and the inserts of an ordinary batch are one statement ([`ROWS`]): a batch of
//! 256 entries is one round trip while the log head is held, not thousands (nor ten). The rows
//! arrive computed by the handle; this only writes them.

use super::conn::Conn;
use super::read::to_i64;
use super::search;
use crate::error::Error;
use crate::store::backend::{AppendGuard, WriteStage};
use crate::store::rows::{AppendBatch, EdgeRow};
use crate::store::text::TermCounts;
use memlineage_core::EntryId;
use std::collections::HashMap;

/// Writes `batch`, calling the guard at each stage. The caller commits.
///
/// The new leaves, their content, full-text documents and value keys, the Merkle nodes, the
/// edges and the log head's size are one statement (one round trip, its sub-statements
/// data-modifying `WITH` queries): the log head is held by the append's transaction, so every
/// round trip while it is held delays every other writer. The rows a control record changes
/// (forgotten entries, raised labels) and a genesis batch's settings are separate statements,
/// after it, when the batch has any.
///
/// `edges_written`: the batch's edges went in before the log head was taken
/// ([`insert_edges`]); they are not written again.
pub(super) fn write(
    conn: &mut Conn,
    batch: &AppendBatch,
    guard: &mut AppendGuard<'_>,
    edges_written: bool,
) -> Result<(), Error> {
    settings(conn, batch)?;
    rows(conn, batch, edges_written)?;
    guard.reached(WriteStage::Entries)?;
    guard.reached(WriteStage::Nodes)?;
    forgotten(conn, batch)?;
    raised(conn, batch)?;
    guard.reached(WriteStage::Derived)?;
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

/// The statement of [`rows`]. Every sub-statement runs even when its arrays are empty (then it
/// inserts nothing); none reads another's rows but through `RETURNING`, and no table has a
/// foreign key, so the order in which PostgreSQL runs them does not matter.
///
/// Every row is keyed by a new entry (its index, or its id as the edge's child), so none can
/// exist yet: the edges and value keys are plain inserts, without the cost of `ON CONFLICT`'s
/// speculative insertion. A conflict would mean rows for entries not in the log — a store
/// edited behind the program's back — and fails the append (a unique violation), as the
/// entries' own keys do.
const ROWS: &str = "
WITH entry_rows AS (
    INSERT INTO entries (idx, id, leaf, scope, writer, kind, label)
    SELECT * FROM unnest($1::int8[], $2::bytea[], $3::bytea[], $4::text[], $5::text[],
                         $6::text[], $7::text[])
), content_rows AS (
    INSERT INTO content (idx, bytes) SELECT * FROM unnest($1::int8[], $8::bytea[])
), search_rows AS (
    INSERT INTO search_recent (idx, scope, len, terms, tfs)
    SELECT * FROM unnest($9::int8[], $10::text[], $11::int4[], $12::text[], $13::text[])
    RETURNING len
), search_totals AS (
    UPDATE search_stats SET docs = docs + (SELECT count(*) FROM search_rows),
                            length = length + (SELECT COALESCE(sum(len), 0) FROM search_rows)
    WHERE one AND cardinality($9::int8[]) > 0
), value_rows AS (
    INSERT INTO value_keys (key, idx) SELECT * FROM unnest($14::bytea[], $15::int8[])
), node_rows AS (
    INSERT INTO nodes (level, idx, hash)
    SELECT * FROM unnest($16::int2[], $17::int8[], $18::bytea[])
), edge_rows AS (
    INSERT INTO edges (parent, child, weight)
    SELECT * FROM unnest($19::bytea[], $20::bytea[], $21::int4[])
)
UPDATE log_head SET size = $22 WHERE one";

/// The new leaves with their content, full-text documents and value keys, the Merkle nodes,
/// the edges and the log's new size, in one statement ([`ROWS`]).
fn rows(conn: &mut Conn, batch: &AppendBatch, edges_written: bool) -> Result<(), Error> {
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
    let docs = Documents::of(batch)?;
    let (value_keys, value_idx) = values(batch)?;
    let (node_levels, node_idx, node_hashes) = nodes(batch)?;
    let (parents, children, weights) = if edges_written {
        (Vec::new(), Vec::new(), Vec::new())
    } else {
        edges(&batch.edges)
    };
    let size = to_i64(batch.first + es.len() as u64)?;
    conn.execute(
        ROWS,
        &[
            &idx,
            &ids,
            &leaves,
            &scopes,
            &writers,
            &kinds,
            &labels,
            &contents,
            &docs.idx,
            &docs.scope,
            &docs.len,
            &docs.terms,
            &docs.tfs,
            &value_keys,
            &value_idx,
            &node_levels,
            &node_idx,
            &node_hashes,
            &parents,
            &children,
            &weights,
            &size,
        ],
    )?;
    Ok(())
}

/// The full-text documents of a batch's new entries, as the columns of [`ROWS`]: each
/// document's distinct terms joined by a space, and their frequencies likewise, kept so in
/// `search_recent` and split into arrays by the settle (a term is a run of alphanumeric
/// characters: it holds no space).
struct Documents<'b> {
    idx: Vec<i64>,
    scope: Vec<&'b str>,
    len: Vec<i32>,
    terms: Vec<String>,
    tfs: Vec<String>,
}

impl<'b> Documents<'b> {
    fn of(batch: &'b AppendBatch) -> Result<Documents<'b>, Error> {
        let mut d = Documents {
            idx: Vec::new(),
            scope: Vec::new(),
            len: Vec::new(),
            terms: Vec::new(),
            tfs: Vec::new(),
        };
        for e in &batch.entries {
            let Some(text) = &e.search_text else {
                continue;
            };
            // Counted before the transaction (`Backend::counts_terms`), else here.
            let counted;
            let c = match &e.terms {
                Some(c) => c,
                None => {
                    counted = TermCounts::of(text);
                    &counted
                }
            };
            let (len, terms, tfs) = search::columns(c);
            d.idx.push(to_i64(e.index)?);
            d.scope.push(&e.scope);
            d.len.push(len);
            d.terms.push(terms);
            d.tfs.push(tfs);
        }
        Ok(d)
    }
}

/// The value-index rows of the new entries (issue 19).
fn values(batch: &AppendBatch) -> Result<(Vec<&[u8]>, Vec<i64>), Error> {
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut idx: Vec<i64> = Vec::new();
    for e in &batch.entries {
        for k in &e.values {
            keys.push(k.as_bytes().as_slice());
            idx.push(to_i64(e.index)?);
        }
    }
    Ok((keys, idx))
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

type NodeColumns<'b> = (Vec<i16>, Vec<i64>, Vec<&'b [u8]>);

fn nodes(batch: &AppendBatch) -> Result<NodeColumns<'_>, Error> {
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
    Ok((levels, idx, hashes))
}

type EdgeColumns<'b> = (Vec<&'b [u8]>, Vec<&'b [u8]>, Vec<i32>);

fn edges(edges: &[EdgeRow]) -> EdgeColumns<'_> {
    let parents: Vec<&[u8]> = edges
        .iter()
        .map(|e| e.parent.as_bytes().as_slice())
        .collect();
    let children: Vec<&[u8]> = edges
        .iter()
        .map(|e| e.child.as_bytes().as_slice())
        .collect();
    let weights: Vec<i32> = edges.iter().map(|e| i32::from(e.weight.bp())).collect();
    (parents, children, weights)
}

/// Inserts lineage edges known before the append takes the log head
/// ([`AppendGuard::early_edges`]), inside its transaction: an edge is keyed by its child, a
/// new entry, so it does not depend on the position, and a conflict (a store edited behind the
/// program's back) fails the append as it would under the lock.
pub(super) fn insert_edges(conn: &mut Conn, edges: &[EdgeRow]) -> Result<(), Error> {
    let (parents, children, weights) = self::edges(edges);
    conn.execute(
        "INSERT INTO edges (parent, child, weight) \
         SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::int4[])",
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
    // A document is either still in `search_recent` or settled into `search`; a settle
    // running now could move it where this statement's snapshot would not see it, so the two
    // are serialised by the settle's advisory lock (schema version 6), taken by a statement of
    // its own: the deletion's snapshot, taken after, sees the settle's commit.
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtext('memlineage_search_settle'))",
        &[],
    )?;
    conn.execute(
        "WITH gone AS (DELETE FROM search WHERE idx = ANY($1::int8[]) RETURNING len),
              gone_recent AS (DELETE FROM search_recent WHERE idx = ANY($1::int8[]) RETURNING len),
              both_gone AS (SELECT len FROM gone UNION ALL SELECT len FROM gone_recent)
         UPDATE search_stats SET docs = docs - (SELECT count(*) FROM both_gone),
                                 length = length - (SELECT COALESCE(sum(len), 0) FROM both_gone)
         WHERE one",
        &[&targets],
    )?;
    conn.execute(
        "DELETE FROM embeddings WHERE idx = ANY($1::int8[])",
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
