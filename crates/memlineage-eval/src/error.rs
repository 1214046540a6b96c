//! The error type of the harness.

/// Why an evaluation run failed. A failed run writes no summary; partial artifacts may remain in
/// the output directory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The memory library failed (store, signature, verification, gate wiring).
    #[error(transparent)]
    Memory(#[from] memlineage::Error),
    /// A scenario file is malformed.
    #[error("scenario {file}: {message}")]
    Scenario {
        /// The scenario file (relative to `crates/memlineage-eval/scenarios/`).
        file: String,
        /// What is wrong.
        message: String,
    },
    /// The gate policy is malformed.
    #[error("gate policy: {0}")]
    Policy(#[from] memlineage_core::gate::PolicyError),
    /// Writing an artifact failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An internal invariant of the harness did not hold (a bug in a scenario or the harness).
    #[error("harness: {0}")]
    Harness(String),
}

impl EvalError {
    pub(crate) fn scenario(file: &str, message: impl Into<String>) -> EvalError {
        EvalError::Scenario {
            file: file.to_string(),
            message: message.into(),
        }
    }
}

impl From<memlineage_core::entry::EntryError> for EvalError {
    fn from(e: memlineage_core::entry::EntryError) -> Self {
        EvalError::Memory(e.into())
    }
}
