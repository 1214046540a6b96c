//! The one error type of the bench runner.

/// Why a benchmark, the generator or the scale run could not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The memory handle or the store failed.
    #[error(transparent)]
    Memory(#[from] memlineage::Error),
    /// A core operation (encoding, signing, proofs, the gate) failed.
    #[error("{0}")]
    Core(String),
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The options or a fixture are not usable (for example a store size that is too small).
    #[error("{0}")]
    Invalid(String),
}

impl BenchError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> BenchError {
        BenchError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    pub(crate) fn core(e: impl std::fmt::Display) -> BenchError {
        BenchError::Core(e.to_string())
    }
}
