//! The audit of the id index: every entry must be found under its id, at its own index. On the
//! SQLite store since schema version 3 that index is a table the store keeps itself
//! (`entry_ids`, merged from the tail, `store/sqlite/ids.rs`) rather than a unique index SQLite
//! maintains, so a row deleted or edited behind the program's back would hide an entry from
//! every read by id (a parent, a context entry: refused, never trusted) — `verify` names it.

use super::problems::Problems;
use crate::error::Error;
use crate::store::{BackendRead, StoredEntry};
use memlineage_core::EntryId;

/// Checks that each entry of `rows` is found by its id at its index.
pub(super) fn check_chunk(
    reads: &dyn BackendRead,
    out: &mut Problems,
    rows: &[StoredEntry],
) -> Result<(), Error> {
    let ids: Vec<EntryId> = rows.iter().map(|r| r.id).collect();
    // One read for the chunk; when it fails (an index row naming another entry), the entries
    // are looked up one by one so that each fault is named.
    let found: Vec<Result<Option<u64>, Error>> = match reads.entries_by_id(&ids) {
        Ok(found) => found.into_iter().map(|e| Ok(e.map(|e| e.index))).collect(),
        Err(_) => ids
            .iter()
            .map(|id| reads.entry_by_id(id).map(|e| e.map(|e| e.index)))
            .collect(),
    };
    for (row, at) in rows.iter().zip(found) {
        let fault = match at {
            Ok(Some(index)) if index == row.index => continue,
            Ok(Some(index)) => format!("the id index finds this entry's id at index {index}"),
            Ok(None) => "the id index does not find this entry by its id (a read by id would miss it: the index was edited)".to_string(),
            Err(e) => format!("reading this entry by its id fails: {e}"),
        };
        out.problem(Some(row.index), Some(row.id), fault);
    }
    Ok(())
}
