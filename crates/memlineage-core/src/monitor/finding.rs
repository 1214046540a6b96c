//! What a monitor reports: a log that went back, forked, or serves entries that do not check.

use crate::{EntryId, Hash256};
use std::fmt;

/// One finding of a monitor, or of a client or witness comparing two views of a log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Finding {
    /// The log shows a smaller tree than one already verified: entries were removed (an older
    /// copy of the store was put back).
    Rollback {
        /// The size verified before.
        held_size: u64,
        /// Its root.
        held_root: Hash256,
        /// The size the log shows now.
        seen_size: u64,
        /// Its root.
        seen_root: Hash256,
    },
    /// Two signed views of the log that no append-only history explains: equal sizes with
    /// different roots, or a newer tree that does not extend the one verified.
    Fork {
        /// The size verified before.
        held_size: u64,
        /// Its root.
        held_root: Hash256,
        /// The size of the other view.
        seen_size: u64,
        /// Its root.
        seen_root: Hash256,
        /// Why they cannot both be true.
        detail: String,
    },
    /// A signed checkpoint whose root the log's leaves do not hash to.
    CheckpointMismatch {
        /// The checkpoint's size.
        size: u64,
        /// The root it signs.
        signed_root: Hash256,
        /// The root of the leaves the log serves.
        computed_root: Hash256,
    },
    /// A checkpoint that is not validly signed for this log (or names another origin).
    BadCheckpoint {
        /// The checkpoint's size, when it parsed.
        size: Option<u64>,
        /// What is wrong.
        reason: String,
    },
    /// An entry that does not check: its leaf, signer, signature, label rule, label or
    /// control record.
    Entry {
        /// Its leaf index.
        index: u64,
        /// Its id, when its leaf decoded.
        id: Option<EntryId>,
        /// What is wrong.
        problem: String,
    },
}

impl Finding {
    /// True for findings about the log's history (rollback, fork, checkpoint mismatch, bad
    /// checkpoint): the monitor does not advance past them. Entry findings are reported and
    /// followed past (the log is append-only; the entry stays where it is).
    pub fn is_history(&self) -> bool {
        !matches!(self, Finding::Entry { .. })
    }

    /// The leaf index the finding is about, for sorting.
    pub(crate) fn index(&self) -> u64 {
        match self {
            Finding::Entry { index, .. } => *index,
            _ => u64::MAX,
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Rollback {
                held_size,
                held_root,
                seen_size,
                seen_root,
            } => write!(
                f,
                "rollback: the log now shows {seen_size} entries (root {seen_root}) but a checkpoint of {held_size} entries (root {held_root}) was verified before: entries were removed, e.g. an older copy of the store was put back"
            ),
            Finding::Fork {
                held_size,
                held_root,
                seen_size,
                seen_root,
                detail,
            } => write!(
                f,
                "fork: the log's tree of size {seen_size} (root {seen_root}) does not extend the verified tree of size {held_size} (root {held_root}): {detail}"
            ),
            Finding::CheckpointMismatch {
                size,
                signed_root,
                computed_root,
            } => write!(
                f,
                "the checkpoint of size {size} signs root {signed_root}, but the log's first {size} leaves hash to {computed_root}"
            ),
            Finding::BadCheckpoint { size, reason } => match size {
                Some(s) => write!(f, "checkpoint of size {s}: {reason}"),
                None => write!(f, "checkpoint: {reason}"),
            },
            Finding::Entry { index, id, problem } => match id {
                Some(id) => write!(f, "entry {index} ({}): {problem}", id.short()),
                None => write!(f, "entry {index}: {problem}"),
            },
        }
    }
}
