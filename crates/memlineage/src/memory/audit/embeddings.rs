//! The audit of the stored embeddings (issue 17): a derived table, like the value index —
//! nothing in it is signed, and retrieval checks each row's binding before it uses the vector
//! (`search/stored.rs`), so an edited row can only hide or misrank an entry, never inject one.
//! `verify` reports what retrieval would quietly refuse and recompute: a row whose binding to
//! its entry (model, entry id, content hash, vector) does not check, and a row for an entry
//! that has no searchable content (a control record, a forgotten or erased entry, or no entry
//! at all).

use super::problems::Problems;
use crate::error::Error;
use crate::search::stored::binding;
use crate::store::{BackendRead, EmbeddingRow, StoredEntry};
use memlineage_core::entry::SignedEntry;

/// Checks the rows of every model for the entries of one chunk of `rows` (contiguous indices).
pub(super) fn check_chunk(
    reads: &dyn BackendRead,
    out: &mut Problems,
    models: &[String],
    rows: &[StoredEntry],
    decoded: &[Option<SignedEntry>],
) -> Result<(), Error> {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Ok(());
    };
    for model in models {
        let stored = reads.embeddings(model, first.index, last.index - first.index + 1)?;
        for row in &stored {
            let at = usize::try_from(row.index - first.index).ok();
            let entry = at.and_then(|i| Some((rows.get(i)?, decoded.get(i)?.as_ref()?)));
            if let Some(why) = fault(row, entry) {
                out.problem(
                    Some(row.index),
                    entry.map(|(r, _)| r.id),
                    format!("the stored embedding of model `{model}` {why}"),
                );
            }
        }
    }
    Ok(())
}

/// Rows of any model at or past `size`: for entries the log does not have.
pub(super) fn check_beyond(
    reads: &dyn BackendRead,
    out: &mut Problems,
    models: &[String],
    size: u64,
) -> Result<(), Error> {
    for model in models {
        for row in reads.embeddings(model, size, u64::MAX - size)? {
            out.problem(
                Some(row.index),
                None,
                format!(
                    "the stored embedding of model `{model}` is for leaf index {} but the log has {size} entries (a row added behind the program: semantic search never uses it)",
                    row.index
                ),
            );
        }
    }
    Ok(())
}

/// What is wrong with `row` for the entry at its index (`None`: the row checks).
fn fault(row: &EmbeddingRow, entry: Option<(&StoredEntry, &SignedEntry)>) -> Option<String> {
    let Some((stored, entry)) = entry else {
        return Some(
            "is for an entry whose leaf does not decode or is missing (a row left behind or added: semantic search never uses it)"
                .into(),
        );
    };
    let body = entry.body();
    if body.kind.is_control() || stored.forgotten_by.is_some() || stored.content.is_none() {
        return Some(
            "is for an entry that has no searchable content (a control record, or an entry forgotten since: the tombstone's append removes it; the row was added or kept behind the program)"
                .into(),
        );
    }
    if binding(&row.model, &entry.id(), &body.content_hash, &row.vector) != row.binding {
        return Some(
            "does not match its binding to the entry's id and content hash (the vector was edited or moved: semantic search refuses it and embeds the content again)"
                .into(),
        );
    }
    None
}
