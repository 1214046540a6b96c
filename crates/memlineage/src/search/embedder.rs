//! What semantic retrieval needs of an embedding model: vectors of unit length for texts, and
//! the identity of the weights (vectors of different models are never compared).
//!
//! With the cargo feature `models`, `memlineage_models::Embedder` (all-MiniLM-L6-v2 on candle,
//! `docs/retrieval.md`) implements it.

use crate::error::Error;

/// An embedding model.
pub trait TextEmbedder: Send + Sync {
    /// The identity of the weights, e.g. `all-MiniLM-L6-v2@53aa51172d14`.
    fn model_id(&self) -> &str;
    /// The dimension of the vectors.
    fn dim(&self) -> usize;
    /// The embeddings of `texts`, in order, each of unit length.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, Error>;
}

#[cfg(feature = "models")]
impl TextEmbedder for memlineage_models::Embedder {
    fn model_id(&self) -> &str {
        memlineage_models::Embedder::model_id(self)
    }

    fn dim(&self) -> usize {
        memlineage_models::Embedder::dim(self)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, Error> {
        memlineage_models::Embedder::embed(self, texts)
            .map_err(|e| Error::Unavailable(format!("embedding model: {e}")))
    }
}

/// Loads all-MiniLM-L6-v2 from where `scripts/fetch-embedding-model.sh` installs it (or
/// `$MEMLINEAGE_EMBEDDING_MODEL`), for [`crate::Memory::with_embedder`].
#[cfg(feature = "models")]
pub fn load_default_embedder() -> Result<std::sync::Arc<dyn TextEmbedder>, Error> {
    let e = memlineage_models::Embedder::load_default()
        .map_err(|e| Error::Unavailable(format!("embedding model: {e}")))?;
    Ok(std::sync::Arc::new(e))
}

/// Loads all-MiniLM-L6-v2 from the directory `dir` (the files
/// `scripts/fetch-embedding-model.sh` installs), for [`crate::Memory::with_embedder`].
#[cfg(feature = "models")]
pub fn load_embedder(dir: &std::path::Path) -> Result<std::sync::Arc<dyn TextEmbedder>, Error> {
    let e = memlineage_models::Embedder::load(dir)
        .map_err(|e| Error::Unavailable(format!("embedding model in {}: {e}", dir.display())))?;
    Ok(std::sync::Arc::new(e))
}
