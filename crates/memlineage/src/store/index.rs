//! The copies of signed fields a store keeps for its queries, as the audit reads them back, and
//! the provided implementations of [`StoreRead::index_rows`] and
//! [`StoreRead::control_records`] for backends that keep no such index.

use super::{RegistryRecord, StoreRead, StoredEntry};
use crate::error::Error;
use memlineage_core::entry::{EntryKind, SignedEntry};

/// The index copies kept beside one leaf. `verify` compares every one of them with the signed
/// body (`docs/store.md`, "What `verify` checks").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexRow {
    /// Leaf index.
    pub index: u64,
    /// The scope the store filters searches by.
    pub scope: String,
    /// The writer the store looks entries up by (`distrust --principal`).
    pub writer: String,
    /// The kind the store finds registry and distrust records by.
    pub kind: String,
    /// The copy of the signed label.
    pub label: String,
    /// The erased flag of the store's forgotten-entry row, when it has one for this entry.
    pub erased: Option<bool>,
}

/// Index rows read out of the leaves themselves (a backend that keeps no copies). A leaf that
/// does not decode yields no row: the audit reports the leaf itself.
pub(super) fn rows_from_leaves(entries: &[StoredEntry]) -> Result<Vec<IndexRow>, Error> {
    Ok(entries
        .iter()
        .filter_map(|e| {
            let entry = SignedEntry::from_leaf(&e.leaf).ok()?;
            let body = entry.body();
            Some(IndexRow {
                index: e.index,
                scope: body.scope.as_str().to_string(),
                writer: body.writer.clone(),
                kind: body.kind.as_str().to_string(),
                label: body.label.as_str().to_string(),
                erased: e.forgotten_by.map(|_| e.content.is_none()),
            })
        })
        .collect())
}

const SCAN_CHUNK: u64 = 4096;

/// Control records of `kind` from `from` on, found by decoding every leaf.
pub(super) fn scan_control_records<R: StoreRead + ?Sized>(
    reader: &R,
    kind: EntryKind,
    from: u64,
) -> Result<Vec<RegistryRecord>, Error> {
    let size = reader.size()?;
    let mut out = Vec::new();
    let mut start = from;
    while start < size {
        let rows = reader.entries(start, SCAN_CHUNK)?;
        let Some(last) = rows.last() else { break };
        start = last.index + 1;
        for row in rows {
            let entry = SignedEntry::from_leaf(&row.leaf).map_err(|e| {
                Error::Integrity(format!("leaf at index {} does not decode: {e}", row.index))
            })?;
            if entry.body().kind != kind {
                continue;
            }
            let content = row.content.ok_or_else(|| {
                Error::Integrity(format!(
                    "{kind} record at index {} has no content (control records are never erased)",
                    row.index
                ))
            })?;
            out.push(RegistryRecord {
                index: row.index,
                leaf: row.leaf,
                content,
            });
        }
    }
    Ok(out)
}
