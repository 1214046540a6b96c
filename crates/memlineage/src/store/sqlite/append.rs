//! Writing one [`AppendBatch`] inside the append transaction, stage by stage
//! ([`WriteStage`]): the rows arrive computed by the handle; this only inserts them.

use super::to_i64;
use super::value_tail::Tail;
use crate::error::Error;
use crate::store::backend::{AppendGuard, WriteStage};
use crate::store::rows::AppendBatch;
use rusqlite::{Connection, params};

/// Writes `batch`, calling the guard at each stage. The caller commits.
/// `tail_entries`: when the tail spans that many entries, a merge of it starts, moved a slice
/// at a time by this and the next appends (`merge_slices.rs`); returns whether the merge point
/// moved. An id already in the log, or twice in the batch, fails it before anything is
/// written. `defer_full_text`: the entries' texts are left to the full-text index's catch-up
/// (`full_text.rs`) instead of written here.
pub(super) fn write(
    tx: &Connection,
    batch: &AppendBatch,
    guard: &mut AppendGuard<'_>,
    tail: &Tail,
    tail_entries: u64,
    defer_full_text: bool,
) -> Result<bool, Error> {
    super::ids::refuse_present(tx, tail, batch.entries.iter().map(|e| &e.id))?;
    // Before the batch's rows: the merge moves committed tail rows only (`merge_slices.rs`).
    let merged = match batch.entries.first() {
        Some(first) => {
            super::merge_slices::step(tx, tail, first.index, batch.entries.len(), tail_entries)?
        }
        None => false,
    };
    {
        let mut ins_setting =
            tx.prepare_cached("INSERT INTO settings (key, value) VALUES (?1, ?2)")?;
        for (k, v) in &batch.settings {
            ins_setting.execute(params![k, v])?;
        }
        let mut ins_entry = tx.prepare_cached(
            "INSERT INTO entries (idx, id, leaf, scope, writer, kind, label) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        let mut ins_content =
            tx.prepare_cached("INSERT INTO content (idx, bytes) VALUES (?1, ?2)")?;
        for e in &batch.entries {
            let idx = to_i64(e.index)?;
            ins_entry.execute(params![
                idx,
                e.id.as_bytes().as_slice(),
                e.leaf,
                e.scope,
                e.writer,
                e.kind.as_str(),
                e.label.as_str()
            ])?;
            ins_content.execute(params![idx, e.content])?;
        }
        super::values::insert_appended(
            tx,
            batch
                .entries
                .iter()
                .flat_map(|e| e.values.iter().map(move |k| (k, e.index))),
        )?;
    }
    // Entries from this one on are not in the full-text index yet.
    let pending_from = super::full_text::append(tx, &batch.entries, defer_full_text)?;
    guard.reached(WriteStage::Entries)?;
    super::nodes::insert(tx, batch.nodes.iter().map(|(node, hash)| (node, hash)))?;
    guard.reached(WriteStage::Nodes)?;
    {
        let mut ins_edge = tx.prepare_cached(
            "INSERT OR IGNORE INTO edges (parent, child, weight) VALUES (?1, ?2, ?3)",
        )?;
        for e in &batch.edges {
            ins_edge.execute(params![
                e.parent.as_bytes().as_slice(),
                e.child.as_bytes().as_slice(),
                e.weight.bp()
            ])?;
        }
        let mut put_forgotten = tx.prepare_cached(
            "INSERT OR REPLACE INTO forgotten (id, tombstone, erased) VALUES (?1, ?2, ?3)",
        )?;
        let mut unindex = tx.prepare_cached("DELETE FROM search WHERE rowid = ?1")?;
        let mut erase = tx.prepare_cached("UPDATE content SET bytes = NULL WHERE idx = ?1")?;
        // A vector is derived from the content: a forgotten entry keeps none.
        let mut unembed = tx.prepare_cached("DELETE FROM embeddings WHERE idx = ?1")?;
        for f in &batch.forgotten {
            let idx = to_i64(f.target_index)?;
            put_forgotten.execute(params![
                f.target.as_bytes().as_slice(),
                f.tombstone.as_bytes().as_slice(),
                f.erased
            ])?;
            // A pending target is never indexed: the catch-up skips forgotten entries.
            if pending_from.is_none_or(|from| f.target_index < from) {
                unindex.execute([idx])?;
            }
            unembed.execute([idx])?;
            if f.erased {
                erase.execute([idx])?;
            }
        }
        let mut put_effective =
            tx.prepare_cached("INSERT OR REPLACE INTO effective (id, label) VALUES (?1, ?2)")?;
        for (id, label) in &batch.raised {
            put_effective.execute(params![id.as_bytes().as_slice(), label.as_str()])?;
        }
    }
    guard.reached(WriteStage::Derived)?;
    guard.reached(WriteStage::Commit)?;
    Ok(merged)
}
