//! The audit of the value index (issue 19): every live content entry must be indexed under
//! every key its content carries, and the index must be marked complete. A missing row would
//! let a later entry that repeats an untrusted value — with its lineage omitted — pass as the
//! value's earliest carrier; the index cannot prove its own completeness, so `verify` does.

use super::problems::Problems;
use crate::error::Error;
use crate::memory::value_index::keys_of_stored;
use crate::store::{BackendRead, StoredEntry};
use memlineage_core::entry::SignedEntry;

/// Checks that each decoded entry of `rows` is indexed under each key of its content.
pub(super) fn check_chunk(
    reads: &dyn BackendRead,
    out: &mut Problems,
    rows: &[StoredEntry],
    decoded: &[Option<SignedEntry>],
) -> Result<(), Error> {
    for (row, entry) in rows.iter().zip(decoded) {
        let Some(entry) = entry else { continue };
        for key in keys_of_stored(entry, row.content.as_deref()) {
            let found = reads.value_carriers(&key, row.index, 1)?;
            if found.first() != Some(&row.index) {
                out.problem(
                    Some(row.index),
                    Some(row.id),
                    format!(
                        "the value index lacks the key {} of a value this entry's content carries: a later entry repeating the value would pass as its earliest carrier (the index was edited, or filled by a program that does not index)",
                        hex::encode(key.as_bytes())
                    ),
                );
            }
        }
    }
    Ok(())
}
