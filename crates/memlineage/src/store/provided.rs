//! What every backend reports the same way.

use crate::error::{Error, IntegrityCheck, IntegrityError};
use memlineage_core::entry::EntryKind;
use memlineage_core::merkle::NodeId;

/// A control record whose content is gone (control records are never erased).
pub(crate) fn erased_control(kind: EntryKind, index: u64) -> Error {
    IntegrityError::new(
        IntegrityCheck::ControlRecord,
        format!("{kind} record at index {index} has no content (control records are never erased)"),
    )
    .at(index)
    .into()
}

/// A Merkle node that is not stored.
pub(crate) fn missing_node(n: &NodeId) -> Error {
    Error::integrity(
        IntegrityCheck::MerkleNode,
        format!(
            "Merkle node (level {}, index {}) is missing",
            n.level, n.index
        ),
    )
}
