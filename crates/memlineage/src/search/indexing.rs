//! When the vector index of semantic retrieval runs the embedding model over the log, and how
//! far it has got.
//!
//! The model is slow beside everything else a write does (all-MiniLM-L6-v2 on a CPU embeds
//! tens of entries per second, where the store appends thousands), so a process that writes
//! at a high rate — the HTTP service — cannot embed inside its writes or inside the searches
//! that follow them. It attaches the model with [`VectorIndexing::Background`] and calls
//! [`crate::Memory::index_vectors`] from a thread of its own: writes and searches never wait
//! for the model, forgotten entries still leave the index before every search, and entries
//! written since the last step are found by the lexical ranking until the indexer reaches
//! them ([`VectorIndexProgress`] says how far that is).

use std::path::PathBuf;

/// When the vector index embeds the entries appended to the log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorIndexing {
    /// When the model is attached (the whole log), after each write of the handle and before
    /// each semantic search (entries appended by other handles): a search sees every entry.
    /// For a library user or a CLI command that writes a little and searches at once.
    #[default]
    Eager,
    /// Only in [`crate::Memory::index_vectors`], which the owner calls from a thread of its
    /// own: attaching the model loads the saved index (if any) and nothing more, writes do
    /// not embed, and a semantic search only removes what was forgotten before it ranks.
    Background,
}

/// How [`crate::Memory::with_vector_index`] attaches an embedding model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VectorIndexOptions {
    /// A directory where the index is saved and loaded from (`memory/semantic/snapshot.rs`),
    /// or none: the index is built from the stored embeddings.
    pub saved_in: Option<PathBuf>,
    /// When the model runs over the log.
    pub indexing: VectorIndexing,
}

/// How far the vector index has got through the log, after a step of
/// [`crate::Memory::index_vectors`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct VectorIndexProgress {
    /// Entries of the log considered (leaf indices below this are indexed, or have no text,
    /// or were forgotten).
    pub considered: u64,
    /// The log's size when the step looked.
    pub log_size: u64,
}

impl VectorIndexProgress {
    /// Entries the index has not reached yet.
    pub fn pending(&self) -> u64 {
        self.log_size.saturating_sub(self.considered)
    }

    /// Whether every entry the step saw is considered.
    pub fn caught_up(&self) -> bool {
        self.pending() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_counts_what_is_left_and_never_underflows() {
        let p = VectorIndexProgress {
            considered: 7,
            log_size: 10,
        };
        assert_eq!(p.pending(), 3);
        assert!(!p.caught_up());
        // A log read before the index caught up past it (another handle's step).
        let ahead = VectorIndexProgress {
            considered: 12,
            log_size: 10,
        };
        assert_eq!(ahead.pending(), 0);
        assert!(ahead.caught_up());
    }

    #[test]
    fn indexing_reads_and_writes_lowercase_names() {
        assert_eq!(
            serde_json::to_string(&VectorIndexing::Background).unwrap(),
            "\"background\""
        );
        assert_eq!(
            serde_json::from_str::<VectorIndexing>("\"eager\"").unwrap(),
            VectorIndexing::Eager
        );
        assert_eq!(VectorIndexing::default(), VectorIndexing::Eager);
    }
}
